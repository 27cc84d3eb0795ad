package testrun

import (
	"bytes"
	"sort"
	"time"
)

// The run as the history store keeps it: the bytes of results.json, and
// the order the store lists runs in.

// EncodeRun is the run as results.json and the history store hold it,
// without its notes (json.Marshal's bytes, no newline).
func EncodeRun(run *Run) ([]byte, error) {
	cp := *run
	cp.Notes = nil
	var b bytes.Buffer
	if err := encodeRun(&b, &cp); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// DecodeRun decodes a run EncodeRun encoded.
func DecodeRun(b []byte) (*Run, error) { return decodeRun(b) }

// SortRuns orders runs oldest first, as Runs returns them.
func SortRuns(runs []*Run) {
	sort.SliceStable(runs, func(i, j int) bool { return runKey(runs[i]) < runKey(runs[j]) })
}

func runKey(r *Run) string {
	if r.Started != "" {
		return r.Started
	}
	return r.CollectedAt.Format(time.RFC3339)
}
