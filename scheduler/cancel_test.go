package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kvsweep/kvsweep/scheduler"
)

// cancelSched records what Cancel was asked to cancel; every submitted
// task is live (Poll says nothing of it).
type cancelSched struct {
	parallelSched
	targets []string
}

func (c *cancelSched) Cancel(_ context.Context, targets []string) error {
	c.targets = append(c.targets, targets...)
	return nil
}

// Cancelling some cells cancels their tasks only, wherever they are in
// the sweep's order: the cells after them stay (kvsweep cancel --cells,
// and the live view's c).
func TestCancelOnlyTheCellsNamed(t *testing.T) {
	dir := eightCells(t)
	s := &cancelSched{parallelSched: parallelSched{concurrency: 1}}
	if _, err := scheduler.Submit(context.Background(), dir, s, scheduler.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	cells, _, err := scheduler.Status(context.Background(), dir, s)
	if err != nil {
		t.Fatal(err)
	}
	n, err := scheduler.Cancel(context.Background(), dir, s, []string{cells[2].ID, cells[5].ID})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint([]string{cells[2].Task, cells[5].Task}); n != 2 || fmt.Sprint(s.targets) != want {
		t.Errorf("cancelled %d: %v, want 2: %s", n, s.targets, want)
	}
	s.targets = nil
	if n, err := scheduler.Cancel(context.Background(), dir, s, nil); err != nil || n != 8 || len(s.targets) != 8 {
		t.Errorf("cancel of the whole sweep: %d %v (%v), want all 8", n, s.targets, err)
	}
	if _, err := scheduler.Cancel(context.Background(), dir, s, []string{"nosuchcell"}); err == nil {
		t.Error("a cell that is not in the sweep was cancelled")
	}
}
