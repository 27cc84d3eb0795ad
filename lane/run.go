package lane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// Outcome is a sweep run to its end and collected.
type Outcome struct {
	Cells []scheduler.CellStatus
	Run   *testrun.Run
	// NotStored is set when the run was collected but the history store
	// could not take it: the run is judged all the same.
	NotStored *history.NotStoredError
}

// Run submits what was never submitted of the prepared sweep, follows it
// until every cell ended, and collects it (into the history store, with
// ref). Cancelled (a signal), it cancels every job of the sweep and says
// so in its error.
func (l *Lane) Run(ctx context.Context, p *Prepared, ref string) (*Outcome, error) {
	err := l.SubmitDir(ctx, p.Dir, nil)
	var cells []scheduler.CellStatus
	if err == nil && ctx.Err() == nil {
		cells, err = l.Watch(ctx, p.Dir)
	}
	if ctx.Err() != nil {
		return nil, l.cancelled(p.Dir)
	}
	if err != nil {
		return nil, err
	}
	if l.Ended != nil {
		l.Ended(cells)
	}
	out := &Outcome{Cells: cells}
	out.Run, err = l.Collect(p.Dir, testrun.CollectOptions{Ref: ref}, "")
	if !errors.As(err, &out.NotStored) && err != nil {
		return nil, err
	}
	return out, nil
}

// cancelled cancels every live job of the sweep after a signal.
func (l *Lane) cancelled(dir string) error {
	_, sched, err := l.Open(dir)
	if err != nil {
		return err
	}
	ctx, done := context.WithTimeout(context.Background(), time.Minute)
	defer done()
	n, err := scheduler.Cancel(ctx, dir, sched, nil)
	if err != nil {
		return fmt.Errorf("interrupted, and cancelling the sweep's jobs failed: %w (run kvsweep cancel %s)", err, dir)
	}
	return fmt.Errorf("interrupted: cancelled %d task(s) of the sweep in %s", n, dir)
}

// Collect collects the sweep in dir with its cells' final states, writes
// results.json and the history store (the lane's Submit.Store, unless
// empty), removes the containers killed tasks left, and prints one line
// per cell without a valid result and the counts. With a report format
// it then prints the run's report (made while results.json is written),
// and the counts line goes to Stderr instead of Stdout. A store that
// could not take the run is a *history.NotStoredError, with the run; a
// sweep with cells not yet ended is a *history.UnfinishedError, with the
// run read so far, nothing written and no counts printed.
func (l *Lane) Collect(dir string, opts testrun.CollectOptions, format reports.Format) (*testrun.Run, error) {
	if err := l.askStates(dir, &opts); err != nil {
		return nil, err
	}
	var report bytes.Buffer
	var reportErr error
	var alongside func(*testrun.Run)
	counts := l.Stdout
	if format != "" {
		counts = l.Stderr
		alongside = func(run *testrun.Run) {
			reportErr = reports.WriteRuns(&report, format, []*testrun.Run{run}, false, dir)
		}
	}
	run, err := history.CollectDir(dir, opts, l.Submit.Store, alongside)
	var notStored *history.NotStoredError
	var unfinished *history.UnfinishedError
	if errors.As(err, &unfinished) {
		// Which cells are not over, and no counts: nothing was collected.
		l.printCells(run)
		return run, err
	}
	if err != nil && !errors.As(err, &notStored) {
		return nil, err
	}
	RemoveLeftovers(l.Stderr, dir, func(id string) bool { s, ok := opts.States[id]; return ok && scheduler.Terminal(s.State) })
	l.printCollected(run, counts)
	if format != "" {
		if reportErr != nil {
			return nil, reportErr
		}
		if _, err := l.Stdout.Write(report.Bytes()); err != nil {
			return nil, err
		}
	}
	if notStored != nil {
		return run, notStored
	}
	return run, nil
}

// printCollected says why each cell without a valid result has none,
// each case a result did not report although planned or reported
// unplanned, and the counts (on counts).
func (l *Lane) printCollected(run *testrun.Run, counts io.Writer) {
	l.printCells(run)
	fmt.Fprintf(counts, "collected sweep %s: %d cells: %s\n", run.ID, len(run.Cells), run.CountsLine())
}

// printCells says on Stderr why each cell without a valid result has
// none.
func (l *Lane) printCells(run *testrun.Run) {
	for _, c := range run.Cells {
		if c.Outcome != testrun.OK {
			fmt.Fprintf(l.Stderr, "kvsweep collect: cell %s (%s): %s%s\n", c.Name, c.CellID, c.Detail, c.LogsHint(run.Dir))
		}
		for _, p := range c.CaseProblems() {
			fmt.Fprintf(l.Stderr, "kvsweep collect: cell %s (%s): %s: %s\n", c.Name, c.CellID, p.Case, p.Message)
		}
	}
}

// askStates reads the sweep's manifest into opts and asks its scheduler
// for its cells' final states.
func (l *Lane) askStates(dir string, opts *testrun.CollectOptions) error {
	m, sched, err := l.Open(dir)
	if err != nil {
		return err
	}
	opts.Manifest = m // read once: a large sweep's manifest is megabytes
	opts.States, err = scheduler.States(context.Background(), dir, sched, func(err error) {
		fmt.Fprintf(l.Stderr, "kvsweep collect: the scheduler could not be asked (%v); cells without a result show the state recorded in the sweep directory\n", err)
	})
	return err
}

// RemoveLeftovers removes the containers the sweep's killed tasks left
// (of the cells ended says have ended) and says so on w; not reaching
// docker is a warning, never a failure of the command it follows.
func RemoveLeftovers(w io.Writer, dir string, ended func(cellID string) bool) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return
	}
	removed, err := scheduler.RemoveLeftovers(context.Background(), m, ended)
	if err != nil {
		fmt.Fprintf(w, "kvsweep: warning: could not look for containers killed tasks of the sweep left: %v\n", err)
		return
	}
	if len(removed) > 0 {
		fmt.Fprintf(w, "kvsweep: removed %d container(s) that killed tasks of the sweep left: %s\n", len(removed), strings.Join(removed, ", "))
	}
}

// EndedIn says which of a status poll's cells have ended.
func EndedIn(cells []scheduler.CellStatus) func(string) bool {
	ended := make(map[string]bool, len(cells))
	for _, c := range cells {
		ended[c.ID] = scheduler.Terminal(c.State)
	}
	return func(id string) bool { return ended[id] }
}
