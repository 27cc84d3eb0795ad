// Package scheduler runs a rendered sweep on whatever runs its jobs: the
// Scheduler interface and its optional capabilities (this file),
// exactly-once submission with crash recovery (submit.go, calls.go,
// reconcile.go), pacing by the room in the queue (pace.go), status,
// watch with infra retries, cancel and the choice of cells to resubmit.
// The schedulers live beneath it: scheduler/slurm (Slurm through its
// command-line tools), scheduler/local (the built-in local executor) and
// scheduler/k8s (Kubernetes), each registered with Open by the command
// (Register). It needs only the sweep directory (package sweep), never the
// spec: whatever rendered the directory, this package runs it.
package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// Scheduler is what submit, status and cancel need from a cluster: Slurm
// through its CLI, the built-in local executor, or Kubernetes. A new
// scheduler (slurmrestd) implements it in a package beneath this one and
// is chosen by Open once registered (Register).
type Scheduler interface {
	Name() string
	MaxArraySize(ctx context.Context) (int, error)
	// Submit submits one job (an array when r.Array is set) and returns its
	// id. A submission the cluster refused is a *RefusedError (or wraps
	// one), which says what the refusal means for its cells.
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
// the sbatch command line (SubmitArgs). Its MaxArraySize asks no cluster.
type DryRunner interface {
	DryRun(r SubmitRequest) (string, error)
}

// Cleaner is a scheduler that keeps objects of ended jobs (Kubernetes Jobs
// and pods): cancelling a whole sweep deletes them with the live ones.
type Cleaner interface {
	Clean(ctx context.Context) error
}

// Queue is a scheduler whose Submit only queues tasks (the local
// executor): Wait runs them to the end, recording them in the journal,
// which the submitting process still holds.
type Queue interface {
	Wait(ctx context.Context, j *sweep.Journal) error
}

// Admitter is a scheduler that can refuse a job before anything of the
// sweep is submitted (the local executor: more GPUs than its pool has).
type Admitter interface {
	Admit(job *sweep.Job, cells []sweep.Cell) error
}

// ConcurrentSubmitter is a scheduler whose Submit may run in several
// goroutines at once, up to SubmitConcurrency calls.
type ConcurrentSubmitter interface {
	SubmitConcurrency() int
}

// Roomer is a scheduler whose queue bounds how many tasks one user may
// have queued at once (each array task counts as a job): Slurm's
// MaxSubmitJobs of the association and the QOS, and the controller's
// MaxJobCount. Submit sends what fits and leaves the rest waiting.
type Roomer interface {
	// Room is the room left now, or nil when no limit applies.
	Room(ctx context.Context, q RoomQuery) (*Room, error)
}

// PollSharer is a scheduler whose followers of many sweeps can share
// their polls (Slurm: one sacct and one squeue per interval for all);
// Watch tells it its interval.
type PollSharer interface{ SharePolls(every time.Duration) }

// Room is how many more tasks the submitting user may queue now, and
// the limit that says so.
type Room struct {
	Free  int    // tasks that may be queued now (0 when the queue is full)
	Limit int    // the binding limit, in tasks
	Used  int    // what counts against it now
	What  string // the limit: "QOS gpu MaxSubmitJobsPerUser", "MaxJobCount", "max_queued"
}

func (r *Room) String() string {
	if r == nil {
		return "no limit"
	}
	return fmt.Sprintf("%s %d, %d in use", r.What, r.Limit, r.Used)
}

// RoomQuery is what a submission's room depends on.
type RoomQuery struct {
	// MaxQueued is the user's own bound on queued tasks (cluster.max_queued
	// or --max-queued), for a site whose limits the user cannot read; 0
	// for none.
	MaxQueued int
	// QOS and Account the jobs are submitted under ("" for the defaults).
	QOS, Account string
	// Cells is how many cells the submission would queue.
	Cells int
}

// PollJob is a submitted job as the sweep recorded it.
type PollJob struct {
	ID    string
	Name  string    // the job name it was submitted with
	Since time.Time // when it was submitted (the intent's time)
}

// SubmitRequest is one submission: one sbatch call, the options named
// after sbatch's.
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

// RefusedError is a submission the cluster refused, in the one vocabulary
// every scheduler speaks, so that submit knows what became of its cells
// without knowing the scheduler: refused for good (the cluster holds no
// job, the cells stay unsubmitted), refused for now (Transient: the
// cluster may hold the job), or no room in the queue yet (NoRoom: the
// cells wait for the next round).
type RefusedError struct {
	// Msg is what the cluster said; the journal keeps it.
	Msg string
	// Transient: the cluster could not be reached or asked to try again
	// until the retries gave up. The submission may have reached it, so
	// its intent stays open for the next submit to settle by name.
	Transient bool
	// NoRoom: refused for a submit limit of the user's queue (Slurm's
	// MaxSubmitJobs and GrpSubmitJobs of the association or QOS), not for
	// anything of the cells.
	NoRoom bool
	// Err, when set, is the scheduler's own error: Error says what it
	// says (a hint of what to change included), and errors.As finds it.
	Err error
}

func (e *RefusedError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *RefusedError) Unwrap() error { return e.Err }
