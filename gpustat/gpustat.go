// Package gpustat is what the GPUs did while a cell ran: power, kernel
// and memory-controller utilisation, memory used, SM and memory clocks
// and temperature, sampled on the job's head node by one long-running
// nvidia-smi stream (kvsweep job gpu-sample):
//
//	nvidia-smi --query-gpu=index,uuid,power.draw,utilization.gpu,utilization.memory,
//	  memory.used,memory.total,clocks.current.sm,clocks.current.memory,temperature.gpu
//	  --format=csv,noheader,nounits -lms N
//
// Each row nvidia-smi prints is checked (ParseRow) and kept as one JSON
// line of cells/ID/gpu.jsonl (Sample), the values under nvidia-smi's own
// field names; a value the GPU does not report ("[N/A]", "[Not
// Supported]") is left out, never read as 0. A node without nvidia-smi,
// or one whose nvidia-smi fails, gives a note line and fails nothing.
// Collect summarises the file per GPU (Summarize): mean, lowest and
// highest of each field, so a power peak, a clock that dropped
// (throttling) and a temperature peak show.
package gpustat

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Fields are the nvidia-smi --query-gpu fields of a row, in order. Their
// names and units (with nounits: W, %, MiB, MHz, degrees C) are
// nvidia-smi's (nvidia-smi --help-query-gpu).
var Fields = []string{
	"index", "uuid", "power.draw", "utilization.gpu", "utilization.memory",
	"memory.used", "memory.total", "clocks.current.sm", "clocks.current.memory", "temperature.gpu",
}

// units are what each numeric field (from the third on) is read as, for
// the refusals.
var units = []string{"watts", "percent", "percent", "MiB", "MiB", "MHz", "MHz", "degrees C"}

// Limits: a row's length, the rows one sampler keeps (8 GPUs every 2 s
// for 11 hours), the notes it writes, and what collect reads.
const (
	MaxLine    = 1024
	MaxSamples = 160000
	MaxNotes   = 50
	MaxFile    = 64 << 20
	maxValue   = 1e7 // no GPU draws 10 MW or has 10 TiB
)

// Sample is one GPU's row of one tick: a line of gpu.jsonl. A line with
// Note only is what the sampler has to say (no nvidia-smi, a row it
// refused, nvidia-smi's exit).
type Sample struct {
	T      int64              `json:"t"` // Unix milliseconds, when the row was read
	GPU    int                `json:"gpu"`
	UUID   string             `json:"uuid,omitempty"`
	Values map[string]float64 `json:"v,omitempty"` // field -> value; absent: not reported
	Note   string             `json:"note,omitempty"`
}

// unreported are the words nvidia-smi prints in place of a value the
// GPU or driver does not give.
func unreported(v string) bool {
	v = strings.Trim(v, "[]")
	switch v {
	case "N/A", "Not Supported", "Unknown Error", "Insufficient Permissions", "GPU is lost", "Requires Pstate change", "Not Available":
		return true
	}
	return false
}

// ParseRow reads one row of the query (csv, noheader, nounits). The
// refusal names the column (1-based, the byte where its field starts),
// the field, the value and what was expected; line is the row's line
// number in the stream, for the position.
func ParseRow(row string, line int) (Sample, error) {
	var s Sample
	if len(row) > MaxLine {
		return s, fmt.Errorf("nvidia-smi:%d:1: a row of %d bytes (expected at most %d)", line, len(row), MaxLine)
	}
	cols := strings.Split(row, ",")
	if len(cols) != len(Fields) {
		return s, fmt.Errorf("nvidia-smi:%d:1: %q has %d fields (expected %d: %s)", line, clip(row), len(cols), len(Fields), strings.Join(Fields, ","))
	}
	col := 1
	for i, raw := range cols {
		v := strings.TrimSpace(raw)
		at := col + len(raw) - len(strings.TrimLeft(raw, " "))
		col += len(raw) + 1
		if err := s.set(i, v); err != nil {
			return Sample{}, fmt.Errorf("nvidia-smi:%d:%d: %s: %q is not %s", line, at, Fields[i], clip(v), err)
		}
	}
	return s, nil
}

// set reads the ith field's value into s; the error says what was expected.
func (s *Sample) set(i int, v string) error {
	switch i {
	case 0:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1023 {
			return fmt.Errorf("a GPU index (expected 0 to 1023)")
		}
		s.GPU = n
	case 1:
		if unreported(v) {
			return nil
		}
		if v == "" || len(v) > 80 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' }) {
			return fmt.Errorf("a GPU UUID (expected printable ASCII, like GPU-5d1c6f5a-...)")
		}
		s.UUID = v
	default:
		if unreported(v) {
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > maxValue {
			return fmt.Errorf("a number of %s (expected 0 to %g, or [N/A] / [Not Supported])", units[i-2], maxValue)
		}
		if s.Values == nil {
			s.Values = map[string]float64{}
		}
		s.Values[Fields[i]] = f
	}
	return nil
}

// clip bounds a value quoted in a refusal.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
