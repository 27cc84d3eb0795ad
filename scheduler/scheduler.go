// Package scheduler runs a rendered sweep: the Slurm client (sbatch,
// squeue, sacct, scontrol and scancel behind the Scheduler interface), the
// built-in local executor, exactly-once submission with crash recovery,
// status, cancel and the choice of cells to resubmit. It needs only the
// sweep directory (package sweep), never the spec: whatever rendered the
// directory, this package runs it.
package scheduler

import (
	"context"
	"time"
)

// Scheduler is what submit, status and cancel need from a cluster: Slurm
// through its CLI, or the built-in local executor. A new scheduler (a
// Kubernetes client, slurmrestd) implements it and is chosen by Open
// (Register adds one that lives in a package of its own).
type Scheduler interface {
	Name() string
	MaxArraySize(ctx context.Context) (int, error)
	// Submit submits one job (an array when r.Array is set) and returns its id.
	Submit(ctx context.Context, r SubmitRequest) (string, error)
	// FindByName returns the ids of jobs with that name, for crash recovery.
	FindByName(ctx context.Context, name string, since time.Time) ([]string, error)
	// Poll returns the state of every task of the given jobs in one round.
	// An answer about a job id whose name is not the one submitted (a job
	// id the cluster handed out again after a reset) is left out.
	Poll(ctx context.Context, jobs []PollJob) (*Poll, error)
	Cancel(ctx context.Context, targets []string) error
}

// DryRunner is a scheduler that shows what it would submit its own way
// (the Kubernetes Job it would create) for submit --dry-run; others show
// the sbatch command line. Its MaxArraySize asks no cluster.
type DryRunner interface {
	DryRun(r SubmitRequest) (string, error)
}

// PollJob is a submitted job as the sweep recorded it.
type PollJob struct {
	ID    string
	Name  string    // the job name it was submitted with
	Since time.Time // when it was submitted (the intent's time)
}

// SubmitRequest is one sbatch call.
type SubmitRequest struct {
	Seq    int    // the journal's submission number
	Dir    string // the sweep directory: sbatch runs there
	Script string // relative to Dir
	// Object is the Kubernetes Job the script runs in, relative to Dir
	// (scheduler k8s); empty elsewhere.
	Object   string
	JobName  string
	Comment  string
	Array    string // task ids in --array syntax; empty for a plain job
	Throttle int    // --array ...%N
	Offset   int    // cell-table index = task id + Offset
	Hold     bool
	// Exclude lists nodes the job must not run on (sbatch --exclude).
	Exclude   []string
	Overrides map[string]string // partition, account, qos, reservation
	TimeLimit time.Duration     // for the local executor (Slurm reads the script)
	GPUs      int               // per task, for the local executor's GPU pool
}

// Cleaner is a scheduler that keeps objects of ended jobs (Kubernetes Jobs
// and pods): cancelling a whole sweep deletes them with the live ones.
type Cleaner interface {
	Clean(ctx context.Context) error
}
