package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// Records is a scheduler that asks no one: status through it rests on the
// sweep's own records (journal, observed states, exit markers). It is what
// a machine that cannot reach the cluster has. It submits and cancels
// nothing.
type Records struct{}

func (Records) Name() string { return "records" }

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
