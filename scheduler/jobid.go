package scheduler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/sweep"
)

// JobRef is a parsed Slurm job id as sacct and squeue print it.
type JobRef struct {
	JobID string // the job, or the array job id of an array task
	Tasks []int  // array task ids; nil for a plain job
	Het   string // hetjob component ("1" of "123+1"), if any
}

// ParseJobID reads "123", "123_4", "123_[5-9%2]", "123_[1,4-6]" and
// "123+1" (a hetjob component). A trailing ".batch"/".0" step is refused:
// callers ask for allocations only (sacct -X).
func ParseJobID(s string) (JobRef, error) {
	if i := strings.IndexByte(s, '+'); i >= 0 {
		return JobRef{JobID: s[:i], Het: s[i+1:]}, checkNum(s[:i], s)
	}
	i := strings.IndexByte(s, '_')
	if i < 0 {
		return JobRef{JobID: s}, checkNum(s, s)
	}
	ref := JobRef{JobID: s[:i]}
	if err := checkNum(ref.JobID, s); err != nil {
		return ref, err
	}
	rest := s[i+1:]
	if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
		rest = rest[1 : len(rest)-1]
	}
	tasks, err := sweep.ParseIndices(rest)
	if err != nil {
		return ref, fmt.Errorf("job id %q: %w", s, err)
	}
	ref.Tasks = tasks
	return ref, nil
}

func checkNum(n, whole string) error {
	if _, err := strconv.ParseUint(n, 10, 64); err != nil {
		return fmt.Errorf("bad job id %q", whole)
	}
	return nil
}

// Slurm job states as kvsweep reports them. Terminal states end a task;
// of those, only COMPLETED is success.
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

// NormalizeState maps Slurm's spellings to one state: "CANCELLED by 0" ->
// CANCELLED, "OOM" -> OUT_OF_MEMORY, squeue's "CONFIGURING" -> RUNNING, ...
func NormalizeState(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i] // "CANCELLED by 1000"
	}
	s = strings.TrimSuffix(s, "+")
	switch s {
	case "PD":
		return StatePending
	case "R", "CG", "COMPLETING", "CONFIGURING", "CF", "RESIZING", "SIGNALING", "STAGE_OUT", "SO":
		return StateRunning
	case "CD":
		return StateCompleted
	case "F":
		return StateFailed
	case "TO":
		return StateTimeout
	case "OOM":
		return StateOOM
	case "NF":
		return StateNodeFail
	case "PR":
		return StatePreempted
	case "CA":
		return StateCancelled
	case "BF":
		return StateBootFail
	case "DL":
		return StateDeadline
	case "RQ", "REQUEUE_FED", "REQUEUE_HOLD", "RH":
		return StateRequeued
	case "SE":
		return StateSpecialExit
	case "S", "ST", "STOPPED":
		return StateSuspended
	case "RD", "RESV_DEL_HOLD", "RF", "REVOKED":
		return StatePending
	}
	return s
}

// ParseExitCode reads sacct's "rc:signal".
func ParseExitCode(s string) (rc, sig int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("bad exit code %q (expected rc:signal)", s)
	}
	rc, err1 := strconv.Atoi(a)
	sig, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("bad exit code %q (expected rc:signal)", s)
	}
	return rc, sig, nil
}
