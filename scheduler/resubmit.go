package scheduler

import "github.com/kvsweep/kvsweep/sweep"

// Selection says which cells to resubmit.
type Selection struct {
	Failed  bool // the last attempt ended without success
	Missing bool // never submitted
	// Infra: the last attempt failed outside the test (InfraFailure).
	Infra bool
}

// Select returns the cells of the sweep in dir that the selection names;
// cells pending, running or completed are never chosen.
func Select(dir string, cells []CellStatus, s Selection) map[string]bool {
	only := map[string]bool{}
	for _, c := range cells {
		if (s.Failed && Terminal(c.State) && c.State != StateCompleted) ||
			(s.Missing && c.State == StateNotSubmitted) ||
			(s.Infra && InfraFailure(dir, c)) {
			only[c.ID] = true
		}
	}
	return only
}

// InfraFailure reports whether the cell's last attempt failed for a
// reason outside the test: its node failed, it was preempted, never
// booted or was lost, or it ended without its harness ever starting (no
// cells/ID/harness-started: an image that could not be pulled, a time
// limit spent waiting for one), or its GPUs failed under it (the job left
// cells/ID/gpu-fault: an Xid, NVLink errors, ...) however it ended. A
// cancelled cell was someone's choice and is not one; neither is a
// harness that ran and failed on healthy GPUs.
func InfraFailure(dir string, c CellStatus) bool {
	switch {
	case sweep.OutsideTest(c.State):
		return true
	case Terminal(c.State) && c.State != StateCancelled && sweep.GPUFault(dir, c.ID):
		return true
	case c.State == StateFailed, c.State == StateTimeout, c.State == StateOOM, c.State == StateSpecialExit:
		return !sweep.IsFile(dir, sweep.CellsDir+"/"+c.ID+"/"+sweep.StartedFile)
	}
	return false
}
