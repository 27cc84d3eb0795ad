package lane

import (
	"fmt"
	"io"
	"sync"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// Statuses asks one for the status of each sweep in dirs at once, one
// goroutine a sweep (their Slurm polls shared through the user's poll
// cache: one sacct and one squeue per interval for all of them). A sweep
// that fails carries its error, and the others go on.
func Statuses(dirs []string, one func(dir string) ([]scheduler.CellStatus, error)) []scheduler.SweepStatus {
	out := make([]scheduler.SweepStatus, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() {
			out[i] = scheduler.SweepStatus{Dir: dir}
			out[i].Cells, out[i].Err = one(dir)
			out[i].Counts = scheduler.Counts(out[i].Cells)
		})
	}
	wg.Wait()
	return out
}

// SaidWaiting says on w how many cells of a paced sweep wait for room
// (kvsweep status; watched: while it follows the sweep).
func SaidWaiting(w io.Writer, dir string, cells []scheduler.CellStatus, watched bool) {
	n := scheduler.Counts(cells)[scheduler.StateNotSubmitted]
	if recs, err := sweep.ReadJournal(dir); n == 0 || err != nil || !sweep.Paced(recs) {
		return
	}
	if watched {
		fmt.Fprintf(w, "kvsweep: %d cells still wait for room in the queue\n", n)
		return
	}
	fmt.Fprintf(w, "kvsweep: %d cells wait for room in the queue: kvsweep status %s --watch (or submit again) submits them as room appears\n", n, dir)
}
