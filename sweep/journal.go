package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Journal record types.
const (
	// RecIntent is written, and synced, before sbatch is called: it names
	// the submission (Seq), its job, the table indices and the Slurm job
	// name that carries the Seq, so a crash after sbatch returned is
	// recovered by finding that name in Slurm.
	RecIntent = "intent"
	// RecSubmitted completes an intent with the Slurm job id.
	RecSubmitted = "submitted"
	// RecAbandoned closes an intent that Slurm never received.
	RecAbandoned = "abandoned"
	// RecFinished is a local-executor task's final state.
	RecFinished = "finished"
	// RecStarted is a local-executor task's process.
	RecStarted = "started"
	// RecWaiting says a submission left cells for later: the queue had
	// no room for them (Note says how many, and which limit). A sweep
	// with one is paced: whoever follows it submits what is left as
	// room appears.
	RecWaiting = "waiting"
)

// Record is one line of state.jsonl.
type Record struct {
	Type      string    `json:"type"`
	Time      time.Time `json:"time"`
	Seq       int       `json:"seq"`
	Scheduler string    `json:"scheduler,omitempty"`
	Job       string    `json:"job,omitempty"`     // manifest job name
	Indices   string    `json:"indices,omitempty"` // cell-table indices, Slurm array syntax: 0-9,12
	Offset    int       `json:"offset,omitempty"`  // array task id = index - offset
	JobName   string    `json:"job_name,omitempty"`
	JobID     string    `json:"job_id,omitempty"` // the (array) job id
	Adopted   bool      `json:"adopted,omitempty"`
	Cell      string    `json:"cell,omitempty"`
	TaskID    string    `json:"task_id,omitempty"`
	State     string    `json:"state,omitempty"`
	ExitCode  int       `json:"exit_code,omitempty"`
	PID       int       `json:"pid,omitempty"`
	Note      string    `json:"note,omitempty"`
	// Fit, on a RecWaiting record, is the most cells to submit at once
	// from then on: sbatch refused twice as many for a limit kvsweep
	// could not read.
	Fit int `json:"fit,omitempty"`
}

// Journal is the append-only state.jsonl of a sweep directory, held under
// an exclusive lock so two kvsweep processes never submit one sweep at once.
type Journal struct {
	f *os.File
}

// ErrBusy is OpenJournal's error when another process holds the lock.
var ErrBusy = errors.New("the journal is in use")

// OpenJournal opens (creating) DIR/state.jsonl and locks it. It fails at
// once, naming the reason, when another process holds the lock.
func OpenJournal(dir string) (*Journal, error) {
	f, err := os.OpenFile(filepath.Join(dir, JournalFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another kvsweep process is submitting or running this sweep (%s is locked): %w", filepath.Join(dir, JournalFile), ErrBusy)
		}
		return nil, err
	}
	if err := repairTail(f, dir); err != nil {
		f.Close()
		return nil, err
	}
	return &Journal{f: f}, nil
}

// repairTail makes the journal end at a record boundary before anything is
// appended, so a record torn by a crash mid-append never has the next
// record written onto it. A tail that is a whole record without its line
// break gets the line break; anything else is moved to
// state.jsonl.torn-TIME beside the journal (nothing is thrown away) and
// cut off.
func repairTail(f *os.File, dir string) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	const window = 1 << 20 // a record is far smaller
	start := max(fi.Size()-window, 0)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return err
	}
	if buf[len(buf)-1] == '\n' {
		return nil
	}
	cut := bytes.LastIndexByte(buf, '\n') + 1
	tail := buf[cut:]
	var r Record
	if json.Unmarshal(tail, &r) == nil && r.Type != "" {
		_, err := f.Write([]byte("\n"))
		return err
	}
	side := filepath.Join(dir, JournalFile+".torn-"+time.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.WriteFile(side, tail, 0o644); err != nil {
		return fmt.Errorf("moving the torn end of %s aside: %w", JournalFile, err)
	}
	if err := f.Truncate(start + int64(cut)); err != nil {
		return err
	}
	return f.Sync()
}

// Append writes records, in one write, and syncs them to disk before
// returning.
func (j *Journal) Append(rs ...Record) error {
	var buf []byte
	for _, r := range rs {
		if r.Time.IsZero() {
			r.Time = time.Now().UTC()
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	if _, err := j.f.Write(buf); err != nil {
		return err
	}
	return j.f.Sync()
}

// Close releases the lock.
func (j *Journal) Close() error { return j.f.Close() }

// ReadJournal returns every record of DIR/state.jsonl (none if it does not
// exist). A torn last line, left by a crash mid-write, is ignored; a bad
// line elsewhere is an error naming it.
func ReadJournal(dir string) ([]Record, error) {
	b, err := ReadFile(dir, JournalFile, MaxJournalSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []Record
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(l, &r); err != nil {
			if i == len(lines)-1 {
				break // torn final write
			}
			return nil, fmt.Errorf("%s:%d: %w", filepath.Join(dir, JournalFile), i+1, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// Submission is an intent with what became of it.
type Submission struct {
	Intent    Record
	JobID     string // empty while unresolved
	Abandoned bool
	Adopted   bool
}

// Submissions folds the journal into submissions by sequence number, in order.
func Submissions(recs []Record) []*Submission {
	var out []*Submission
	bySeq := map[int]*Submission{}
	for _, r := range recs {
		switch r.Type {
		case RecIntent:
			s := &Submission{Intent: r}
			bySeq[r.Seq] = s
			out = append(out, s)
		case RecSubmitted:
			if s := bySeq[r.Seq]; s != nil {
				s.JobID, s.Adopted = r.JobID, r.Adopted
			}
		case RecAbandoned:
			if s := bySeq[r.Seq]; s != nil {
				s.Abandoned = true
			}
		}
	}
	return out
}

// Paced reports whether a submission of the sweep left cells waiting for
// room in the queue (a RecWaiting record).
func Paced(recs []Record) bool {
	for _, r := range recs {
		if r.Type == RecWaiting {
			return true
		}
	}
	return false
}

// Fit is the most cells to submit at once that the last RecWaiting
// record with one says (0: no bound).
func Fit(recs []Record) int {
	fit := 0
	for _, r := range recs {
		if r.Type == RecWaiting && r.Fit > 0 {
			fit = r.Fit
		}
	}
	return fit
}

// NextSeq is one more than the highest sequence number in recs.
func NextSeq(recs []Record) int {
	n := 0
	for _, r := range recs {
		if r.Seq > n {
			n = r.Seq
		}
	}
	return n + 1
}

// CellsOf returns the manifest cells a journal record covers (an intent's
// job and indices); none when its indices do not parse.
func (m *Manifest) CellsOf(in Record) []Cell {
	idx, err := ParseIndices(in.Indices)
	if err != nil {
		return nil
	}
	want := make(map[int]bool, len(idx))
	for _, i := range idx {
		want[i] = true
	}
	var out []Cell
	for _, c := range m.Cells {
		if c.Job == in.Job && want[c.Index] {
			out = append(out, c)
		}
	}
	return out
}
