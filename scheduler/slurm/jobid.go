package slurm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/scheduler"
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
		return scheduler.StatePending
	case "R", "CG", "COMPLETING", "CONFIGURING", "CF", "RESIZING", "SIGNALING", "STAGE_OUT", "SO":
		return scheduler.StateRunning
	case "CD":
		return scheduler.StateCompleted
	case "F":
		return scheduler.StateFailed
	case "TO":
		return scheduler.StateTimeout
	case "OOM":
		return scheduler.StateOOM
	case "NF":
		return scheduler.StateNodeFail
	case "PR":
		return scheduler.StatePreempted
	case "CA":
		return scheduler.StateCancelled
	case "BF":
		return scheduler.StateBootFail
	case "DL":
		return scheduler.StateDeadline
	case "RQ", "REQUEUE_FED", "REQUEUE_HOLD", "RH":
		return scheduler.StateRequeued
	case "SE":
		return scheduler.StateSpecialExit
	case "S", "ST", "STOPPED":
		return scheduler.StateSuspended
	case "RD", "RESV_DEL_HOLD", "RF", "REVOKED":
		return scheduler.StatePending
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
