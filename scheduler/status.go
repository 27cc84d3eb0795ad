package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/sweep"
)

// CellStatus is where one cell stands.
type CellStatus struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Job     string `json:"job"`
	Index   int    `json:"index"`
	Task    string `json:"task,omitempty"` // "123_4", or "123" for a plain job
	Attempt int    `json:"attempt"`        // number of submissions of this cell
	sweep.TaskState
	// Earlier is how the cell's earlier submissions ended, oldest first,
	// where the scheduler or the sweep's records still know.
	Earlier []sweep.TaskState `json:"earlier,omitempty"`
}

// Status reports every cell of the sweep in dir: the latest submission of
// each cell from the journal, one scheduler poll for all of them, and the
// cells' exit markers where the scheduler says nothing (accounting off and
// the job forgotten, or not yet recorded). It only reads: the terminal
// states a scheduler reports are kept for later by Observe.
func Status(ctx context.Context, dir string, sched Scheduler) ([]CellStatus, *Poll, error) {
	return status(ctx, dir, sched, false)
}

// Observe is Status that also records in observed.json the terminal
// states the scheduler reported, which outlive its memory where
// accounting is off. Whatever follows a sweep (status --watch, run
// --wait, submit, collect) observes; a plain status query does not write.
func Observe(ctx context.Context, dir string, sched Scheduler) ([]CellStatus, *Poll, error) {
	return status(ctx, dir, sched, true)
}

func status(ctx context.Context, dir string, sched Scheduler, record bool) ([]CellStatus, *Poll, error) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		return nil, nil, err
	}
	out, jobs, earlier := fromJournal(m, recs)
	poll, err := sched.Poll(ctx, jobs)
	if err != nil {
		return nil, nil, err
	}
	// An unreadable observed.json (refused, corrupt) costs detail only.
	seenBefore, _ := sweep.ReadObserved(dir)
	observed := 0
	for task, ts := range poll.Tasks {
		if Terminal(ts.State) && seenBefore[task] != ts {
			seenBefore[task] = ts
			observed++
		}
	}
	for i := range out {
		cs := &out[i]
		for _, task := range earlier[cs.ID] {
			if ts, ok := seenBefore[task]; ok {
				cs.Earlier = append(cs.Earlier, ts)
			}
		}
		if cs.Task != "" {
			settle(dir, cs, poll, seenBefore)
		}
	}
	if record && observed > 0 {
		// Best effort: losing it only costs detail later.
		_ = sweep.WriteObserved(dir, seenBefore)
	}
	return out, poll, nil
}

// fromJournal is what the sweep's own records say of each cell: not
// submitted, or submitted as a task of a job (its attempts counted), the
// jobs to poll, and by cell id the task keys of its earlier submissions.
func fromJournal(m *sweep.Manifest, recs []sweep.Record) (out []CellStatus, jobs []PollJob, earlier map[string][]string) {
	out = make([]CellStatus, len(m.Cells))
	pos := make(map[string]int, len(m.Cells))
	for i, c := range m.Cells {
		out[i] = CellStatus{ID: c.ID, Name: c.Name, Job: c.Job, Index: c.Index,
			TaskState: sweep.TaskState{State: StateNotSubmitted, Source: "journal"}}
		pos[c.ID] = i
	}
	seen := map[string]bool{}
	earlier = map[string][]string{}
	for _, s := range sweep.Submissions(recs) {
		if s.Abandoned {
			continue
		}
		j := m.JobByName(s.Intent.Job)
		for _, c := range m.CellsOf(s.Intent) {
			cs := &out[pos[c.ID]]
			cs.Attempt++
			if cs.Task != "" {
				earlier[c.ID] = append(earlier[c.ID], cs.Task)
			}
			cs.Task, cs.TaskState = "", sweep.TaskState{State: StateSubmitted, Source: "journal"}
			if s.JobID == "" {
				cs.Reason = "unconfirmed: the next kvsweep submit settles it"
				continue
			}
			task := -1
			if j != nil && j.Array {
				task = c.Index - s.Intent.Offset
			}
			cs.Task = TaskKey(s.JobID, task)
		}
		if s.JobID != "" && !seen[s.JobID] {
			seen[s.JobID] = true
			jobs = append(jobs, PollJob{ID: s.JobID, Name: s.Intent.JobName, Since: s.Intent.Time})
		}
	}
	return out, jobs, earlier
}

// settle sets a submitted cell's state from the poll, what an earlier
// poll saw, or its exit marker; a task no longer known anywhere is LOST
// where the scheduler keeps no accounting.
func settle(dir string, cs *CellStatus, poll *Poll, seenBefore map[string]sweep.TaskState) {
	ts, polled := poll.Tasks[cs.Task]
	if !polled {
		ts, polled = seenBefore[cs.Task]
	}
	if polled && (ts.Source == "sacct" || !Terminal(ts.State)) {
		cs.TaskState = ts
		return
	}
	// squeue and the local journal say how a task ended but not always
	// its exit code; the exit marker does.
	mk, ok, err := sweep.ReadExitMarker(dir, cs.ID)
	if polled {
		cs.TaskState = ts
		if err == nil && ok && markerIsFor(mk, cs.Task) {
			cs.ExitCode = mk.ExitCode
		}
		return
	}
	if err == nil && ok && markerIsFor(mk, cs.Task) {
		cs.TaskState = sweep.TaskState{State: StateCompleted, ExitCode: mk.ExitCode, Source: "marker",
			Nodes: mk.Host, Elapsed: FormatElapsed(mk.Finished.Sub(mk.Started))}
		if mk.ExitCode != 0 {
			cs.State = StateFailed
		}
		return
	}
	if !poll.Accounting {
		cs.TaskState = sweep.TaskState{State: StateLost, Source: "marker",
			Reason: "the scheduler no longer knows the job and it left no exit marker"}
	}
}

// markerIsFor reports whether an exit marker was written by the task key
// ("123_4" or "123").
func markerIsFor(mk sweep.ExitMarker, key string) bool {
	if mk.ArrayJobID != "" {
		return TaskKey(mk.ArrayJobID, atoiOr(mk.ArrayTaskID, -1)) == key
	}
	return mk.JobID == key
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// Counts is the number of cells per state.
func Counts(cells []CellStatus) map[string]int {
	c := map[string]int{}
	for _, s := range cells {
		c[s.State]++
	}
	return c
}

// Done reports whether every submitted cell is terminal.
func Done(cells []CellStatus) bool {
	for _, c := range cells {
		if c.State != StateNotSubmitted && !Terminal(c.State) {
			return false
		}
	}
	return true
}

// stateOrder is the order of CountsLine: outcomes first, then live states.
var stateOrder = map[string]int{StateCompleted: 0, StateFailed: 1, StateTimeout: 2, StateOOM: 3, StateCancelled: 4,
	StateNodeFail: 5, StateLost: 6, StateRunning: 7, StatePending: 8, StateSubmitted: 9, StateNotSubmitted: 10}

// Ended counts the cells submitted and, of those, the ones that ended:
// what a progress bar of a wait shows.
func Ended(cells []CellStatus) (submitted, ended int) {
	for _, c := range cells {
		if c.State != StateNotSubmitted {
			submitted++
			if Terminal(c.State) {
				ended++
			}
		}
	}
	return submitted, ended
}

// CountsLine is "3 COMPLETED, 1 FAILED, 2 RUNNING" in a fixed state order.
func CountsLine(cells []CellStatus) string {
	counts := Counts(cells)
	rank := func(s string) int {
		if o, ok := stateOrder[s]; ok {
			return o
		}
		return 5
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", counts[k], k)
	}
	return strings.Join(parts, ", ")
}

// WriteStatus prints cells as a table (with a counts line) or JSON.
func WriteStatus(w io.Writer, cells []CellStatus, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Cells  []CellStatus   `json:"cells"`
			Counts map[string]int `json:"counts"`
		}{cells, Counts(cells)})
	case "table", "markdown":
		rows := make([][]string, len(cells))
		for i, c := range cells {
			exit := ""
			// A cell cancelled before it ran has no exit status to show.
			if Terminal(c.State) && c.State != StateLost && !(c.State == StateCancelled && c.ExitCode == 0 && c.Signal == 0) {
				exit = strconv.Itoa(c.ExitCode) + ":" + strconv.Itoa(c.Signal)
			}
			rows[i] = []string{c.ID, c.Name, c.Task, c.State, exit, c.Elapsed, c.Nodes, c.Reason}
		}
		if err := table.Write(w, table.Format(format), []string{"id", "name", "job", "state", "exit", "elapsed", "nodes", "reason"}, rows); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%d cells: %s\n", len(cells), CountsLine(cells))
		return err
	}
	return fmt.Errorf("unknown format %q (expected table, markdown or json)", format)
}

// FormatElapsed writes d as sacct does: [D-]HH:MM:SS.
func FormatElapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	days, h, m, sec := s/86400, s%86400/3600, s%3600/60, s%60
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, sec)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, sec)
}

// SweepStatus is one sweep's cells in the status of several; Err, when
// set, is why the sweep could not be read (it is then left out of what
// WriteStatuses writes).
type SweepStatus struct {
	Dir    string         `json:"dir"`
	Cells  []CellStatus   `json:"cells"`
	Counts map[string]int `json:"counts"`
	Err    error          `json:"-"`
}

// WriteStatuses writes each sweep that was read: a table under a heading
// naming its directory, or one JSON list.
func WriteStatuses(w io.Writer, sweeps []SweepStatus, format string) error {
	read := make([]SweepStatus, 0, len(sweeps))
	for _, s := range sweeps {
		if s.Err == nil {
			read = append(read, s)
		}
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(read)
	}
	for i, s := range read {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if format == "markdown" {
			fmt.Fprintf(w, "## %s\n\n", s.Dir)
		} else {
			fmt.Fprintf(w, "%s\n", s.Dir)
		}
		if err := WriteStatus(w, s.Cells, format); err != nil {
			return err
		}
	}
	return nil
}
