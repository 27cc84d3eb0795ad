package scheduler

import (
	"context"
	"strconv"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// Scheduler is what submit, status and cancel need from a cluster: Slurm
// through its CLI, or the built-in local executor. A new scheduler (a
// Kubernetes client, slurmrestd) implements it and is added to Open.
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

// Poll is one round of scheduler answers, keyed by task: "JOBID_TASK" for
// array tasks, "JOBID" for plain jobs.
type Poll struct {
	Tasks map[string]sweep.TaskState
	// Accounting is false where sacct answered that accounting is disabled.
	Accounting bool
	// Foreign lists answers left out because the job id now belongs to a
	// job of another name: "123 (RUNNING, named kvs.other.s1)".
	Foreign []string
}

// TaskKey names a task of a job: "123_4", or "123" when task < 0.
func TaskKey(jobID string, task int) string {
	if task < 0 {
		return jobID
	}
	return jobID + "_" + strconv.Itoa(task)
}

// set records ts for a job id as sacct prints it ("123_[4-6%2]" covers three tasks).
func (p *Poll) set(id string, ts sweep.TaskState) {
	ref, err := ParseJobID(id)
	if err != nil || ref.Het != "" && ref.Het != "0" {
		return // hetjob components after the first are steps of one allocation
	}
	if ref.Tasks == nil {
		p.Tasks[ref.JobID] = ts
		return
	}
	for _, t := range ref.Tasks {
		p.Tasks[TaskKey(ref.JobID, t)] = ts
	}
}

// merge adds squeue's view: it fills tasks sacct does not show (yet, or at
// all without accounting) and adds pending reasons to those it does.
func (p *Poll) merge(id string, ts sweep.TaskState) {
	ref, err := ParseJobID(id)
	if err != nil {
		return
	}
	keys := []string{ref.JobID}
	if ref.Tasks != nil {
		keys = keys[:0]
		for _, t := range ref.Tasks {
			keys = append(keys, TaskKey(ref.JobID, t))
		}
	}
	for _, k := range keys {
		old, ok := p.Tasks[k]
		switch {
		case !ok || !Terminal(old.State) && old.State != ts.State:
			p.Tasks[k] = ts
		case ts.Reason != "" && old.Reason == "":
			old.Reason = ts.Reason
			p.Tasks[k] = old
		}
	}
}
