package scheduler

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// Config picks and configures a scheduler.
type Config struct {
	// Name is "slurm" or "local"; empty means the scheduler of the sweep's
	// last submission, else the one its spec names.
	Name string
	// RetryDeadline bounds Slurm's retries of transient errors.
	RetryDeadline time.Duration
	// Parallel bounds the local executor's tasks at once (default: CPUs).
	Parallel int
	// Log receives retry notices and the local executor's messages.
	Log io.Writer
}

// Open reads the manifest of the sweep in dir and returns the scheduler
// for it (see Config.Name).
func Open(dir string, cfg Config) (*sweep.Manifest, Scheduler, error) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	name := cfg.Name
	if name == "" {
		recs, _ := sweep.ReadJournal(dir)
		for _, r := range recs {
			if r.Type == sweep.RecIntent {
				name = r.Scheduler
			}
		}
	}
	if name == "" {
		name = m.Scheduler
	}
	switch name {
	case "slurm", "":
		return m, &Slurm{Deadline: cfg.RetryDeadline, Log: cfg.Log}, nil
	case "local":
		return m, &Local{Dir: dir, Parallel: cfg.Parallel, Log: cfg.Log}, nil
	}
	return nil, nil, fail.Usagef("--scheduler %q: expected slurm or local", name)
}

// Records is a scheduler that asks no one: status through it rests on the
// sweep's own records (journal, observed states, exit markers). It is what
// a machine that cannot reach the cluster has. It submits and cancels
// nothing.
type Records struct{}

func (Records) Name() string                              { return "records" }
func (Records) MaxArraySize(context.Context) (int, error) { return sweep.DefaultMaxArraySize, nil }
func (Records) Submit(context.Context, SubmitRequest) (string, error) {
	return "", fmt.Errorf("the sweep's records cannot submit")
}
func (Records) FindByName(context.Context, string, time.Time) ([]string, error) { return nil, nil }
func (Records) Poll(context.Context, []PollJob) (*Poll, error) {
	return &Poll{Tasks: map[string]sweep.TaskState{}, Accounting: true}, nil
}
func (Records) Cancel(context.Context, []string) error {
	return fmt.Errorf("the sweep's records cannot cancel")
}

// States returns each cell's state by cell id. When the scheduler cannot
// be asked (another machine, the controller down), warn is told why and
// the states come from the sweep's own records.
func States(ctx context.Context, dir string, sched Scheduler, warn func(error)) (map[string]sweep.CellState, error) {
	cells, _, err := Observe(ctx, dir, sched)
	if err != nil {
		warn(err)
		if cells, _, err = Status(ctx, dir, Records{}); err != nil {
			return nil, err
		}
	}
	out := make(map[string]sweep.CellState, len(cells))
	for _, c := range cells {
		out[c.ID] = sweep.CellState{TaskState: c.TaskState, Attempts: c.Attempt, Earlier: c.Earlier}
	}
	return out, nil
}

// Selection says which cells to resubmit.
type Selection struct {
	Failed  bool // the last attempt ended without success
	Missing bool // never submitted
}

// Select returns the cells of the selection; cells pending, running or
// completed are never chosen.
func Select(cells []CellStatus, s Selection) map[string]bool {
	only := map[string]bool{}
	for _, c := range cells {
		if (s.Failed && Terminal(c.State) && c.State != StateCompleted) ||
			(s.Missing && c.State == StateNotSubmitted) {
			only[c.ID] = true
		}
	}
	return only
}

// Cancel cancels the live tasks of the sweep in dir: all of them, or those
// of the given cells. It returns how many tasks it cancelled; a cell that
// is not live is a usage error.
func Cancel(ctx context.Context, dir string, sched Scheduler, cellIDs []string) (int, error) {
	cells, _, err := Observe(ctx, dir, sched)
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, id := range cellIDs {
		want[id] = true
	}
	var targets []string
	for _, c := range cells {
		if c.Task == "" || Terminal(c.State) || (len(want) > 0 && !want[c.ID]) {
			continue
		}
		targets = append(targets, c.Task)
		delete(want, c.ID)
	}
	for id := range want {
		return 0, fail.Usagef("cell %q is not a live cell of this sweep", id)
	}
	return len(targets), sched.Cancel(ctx, targets)
}

// Watch polls every interval until every submitted cell is terminal,
// calling show with each poll's cells, and returns the last poll.
func Watch(ctx context.Context, dir string, sched Scheduler, interval time.Duration, show func([]CellStatus)) ([]CellStatus, error) {
	for {
		cells, _, err := Observe(ctx, dir, sched)
		if err != nil {
			return nil, err
		}
		show(cells)
		if Done(cells) {
			return cells, nil
		}
		select {
		case <-ctx.Done():
			return cells, fmt.Errorf("interrupted")
		case <-time.After(interval):
		}
	}
}
