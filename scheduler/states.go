package scheduler

// Job states as kvsweep reports them, in Slurm's names: every scheduler
// maps its own to them. Terminal states end a task; of those, only
// COMPLETED is success.
const (
	StatePending     = "PENDING"
	StateRunning     = "RUNNING"
	StateCompleted   = "COMPLETED"
	StateFailed      = "FAILED"
	StateTimeout     = "TIMEOUT"
	StateOOM         = "OUT_OF_MEMORY"
	StateNodeFail    = "NODE_FAIL"
	StatePreempted   = "PREEMPTED"
	StateCancelled   = "CANCELLED"
	StateBootFail    = "BOOT_FAIL"
	StateDeadline    = "DEADLINE"
	StateRequeued    = "REQUEUED"
	StateSpecialExit = "SPECIAL_EXIT"
	StateSuspended   = "SUSPENDED"
	// StateSubmitted: the journal says submitted, Slurm does not show it yet
	// (accounting lags a few seconds behind sbatch).
	StateSubmitted = "SUBMITTED"
	// StateLost: Slurm has forgotten the task (no accounting, past
	// MinJobAge) and it left no exit marker: it died without a trace.
	StateLost = "LOST"
	// StateNotSubmitted: the cell was never submitted.
	StateNotSubmitted = "NOT_SUBMITTED"
)

var terminal = map[string]bool{
	StateCompleted: true, StateFailed: true, StateTimeout: true, StateOOM: true,
	StateNodeFail: true, StatePreempted: true, StateCancelled: true, StateBootFail: true,
	StateDeadline: true, StateSpecialExit: true, StateLost: true,
}

// Terminal reports whether a task in state s will not change any more.
func Terminal(s string) bool { return terminal[s] }
