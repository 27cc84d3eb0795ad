package lane

import (
	"sync"

	"github.com/kvsweep/kvsweep/scheduler"
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
