package scheduler

import (
	"context"

	"github.com/kvsweep/kvsweep/internal/fail"
)

// Cancel cancels the live tasks of the sweep in dir: all of them, or those
// of the given cells. It returns how many tasks it cancelled; a cell that
// is not live is a usage error.
func Cancel(ctx context.Context, dir string, sched Scheduler, cellIDs []string) (int, error) {
	cells, _, err := Observe(ctx, dir, sched)
	if err != nil {
		return 0, err
	}
	want, missing := map[string]bool{}, map[string]bool{}
	for _, id := range cellIDs {
		want[id], missing[id] = true, true
	}
	var targets []string
	for _, c := range cells {
		// want, not missing: once the cells named are found, the cells
		// after them are still not named.
		if c.Task == "" || Terminal(c.State) || (len(want) > 0 && !want[c.ID]) {
			continue
		}
		targets = append(targets, c.Task)
		delete(missing, c.ID)
	}
	for id := range missing {
		return 0, fail.Usagef("cell %q is not a live cell of this sweep", id)
	}
	if err := sched.Cancel(ctx, targets); err != nil {
		return 0, err
	}
	if c, ok := sched.(Cleaner); ok && len(cellIDs) == 0 {
		// The whole sweep: what the cluster keeps of its ended jobs goes
		// too; the sweep's records (observed.json) keep how they ended.
		return len(targets), c.Clean(ctx)
	}
	return len(targets), nil
}
