package scheduler

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kvsweep/kvsweep/sweep"
)

// SubmitOptions control Submit.
type SubmitOptions struct {
	// Only restricts submission to these cells (resubmit); nil means every
	// cell that was never submitted.
	Only map[string]bool
	// MaxArraySize splits arrays; 0 asks the scheduler.
	MaxArraySize int
	MaxRunning   int // array throttle %N
	Hold         bool
	Overrides    map[string]string
	// Exclude lists nodes no job of this submission may run on.
	Exclude []string
	// MaxQueued bounds the tasks the user has queued at once (over the
	// manifest's max_queued); 0 leaves it to the scheduler's limits.
	MaxQueued int
	// DryRun prints the sbatch command lines to Out and changes nothing.
	DryRun bool
	Out    io.Writer
	// Submitted, if set, is told what was submitted, before a Queue
	// scheduler runs the tasks.
	Submitted func(*SubmitReport)
}

// SubmitReport says what Submit did.
type SubmitReport struct {
	Adopted   int // unconfirmed submissions found in Slurm
	Abandoned int // unconfirmed submissions Slurm never received
	Calls     int // sbatch calls
	Cells     int // cells submitted
	JobIDs    []string
	// Final is every cell's state after a Queue scheduler ran the tasks.
	Final []CellStatus
	// Waiting is how many chosen cells were left for later: the queue
	// had no room for them (Room says which limit; nil when none applies),
	// or sbatch refused them for a submit limit (Refused, its message).
	Waiting int
	Room    *Room
	Refused string
}

// Submit submits the cells of the sweep in dir that need it, exactly once,
// holding the sweep's journal (and so its lock) throughout.
//
// It first settles every submission an earlier run left unconfirmed (its
// intent is in the journal, its job id is not): a job with that
// submission's name in the scheduler is adopted, otherwise the intent is
// abandoned. Then each job's cells are submitted as arrays (split at the
// cluster's MaxArraySize with an index offset), each call preceded by a
// synced intent record and followed by a synced submitted record. A Queue
// scheduler then runs the tasks before Submit returns.
func Submit(ctx context.Context, dir string, sched Scheduler, opts SubmitOptions) (*SubmitReport, error) {
	if opts.DryRun {
		return submit(ctx, nil, dir, sched, opts)
	}
	j, err := sweep.OpenJournal(dir)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	rep, err := submit(ctx, j, dir, sched, opts)
	if err != nil {
		return rep, err
	}
	if opts.Submitted != nil {
		opts.Submitted(rep)
	}
	q, ok := sched.(Queue)
	if !ok || rep.Cells == 0 {
		return rep, nil
	}
	if err := q.Wait(ctx, j); err != nil {
		return rep, fmt.Errorf("interrupted: running tasks were terminated and are recorded as CANCELLED")
	}
	rep.Final, _, err = Observe(context.WithoutCancel(ctx), dir, sched)
	return rep, err
}

func submit(ctx context.Context, j *sweep.Journal, dir string, sched Scheduler, opts SubmitOptions) (*SubmitReport, error) {
	rep := &SubmitReport{}
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	crashHook("manifest")
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		if err := reconcile(ctx, j, dir, m, recs, sched, rep); err != nil {
			return rep, err
		}
		if recs, err = sweep.ReadJournal(dir); err != nil {
			return rep, err
		}
	}
	crashHook("reconciled")
	maxArray, err := arrayLimit(ctx, sched, opts)
	if err != nil {
		return rep, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return rep, err
	}
	chosen, err := choose(m, SubmittedCells(m, recs), sched, opts)
	if err != nil {
		return rep, err
	}
	if !opts.DryRun {
		if err := pace(ctx, j, m, chosen, sched, opts, rep, recs); err != nil {
			return rep, err
		}
	}
	todo, err := planCalls(m, chosen, sweep.NextSeq(recs), maxArray, abs, sched, opts)
	if err != nil || len(todo) == 0 {
		return rep, err
	}
	return rep, submitAll(ctx, j, sched, todo, rep)
}

// arrayLimit is the largest array to submit: --max-array-size, else the
// cluster's (a dry run asks no cluster but a DryRunner, which knows its
// own, and says what it assumed).
func arrayLimit(ctx context.Context, sched Scheduler, opts SubmitOptions) (int, error) {
	switch {
	case opts.MaxArraySize > 0:
		return opts.MaxArraySize, nil
	case opts.DryRun && isDryRunner(sched):
		// A DryRunner knows its limit without asking (Kubernetes' is fixed).
		return sched.MaxArraySize(ctx)
	case opts.DryRun:
		// A dry run asks nothing of the cluster: it may not be reachable
		// from here. It says what it assumed instead.
		fmt.Fprintf(opts.Out, "# dry run: nothing was asked of the cluster; arrays split at MaxArraySize %d (Slurm's default; --max-array-size sets it)\n", sweep.DefaultMaxArraySize)
		return sweep.DefaultMaxArraySize, nil
	}
	return sched.MaxArraySize(ctx)
}

// choose returns, by job name, the cells to submit: those never
// submitted, or opts.Only; a scheduler that admits jobs sees each job
// with its chosen cells first.
func choose(m *sweep.Manifest, submitted map[string]bool, sched Scheduler, opts SubmitOptions) (map[string][]sweep.Cell, error) {
	chosen := map[string][]sweep.Cell{}
	for _, c := range m.Cells {
		if (opts.Only == nil && !submitted[c.ID]) || (opts.Only != nil && opts.Only[c.ID]) {
			chosen[c.Job] = append(chosen[c.Job], c)
		}
	}
	if a, ok := sched.(Admitter); ok {
		for i := range m.Jobs {
			if cells := chosen[m.Jobs[i].Name]; len(cells) > 0 {
				if err := a.Admit(&m.Jobs[i], cells); err != nil {
					return nil, err
				}
			}
		}
	}
	return chosen, nil
}

func isDryRunner(s Scheduler) bool {
	_, ok := s.(DryRunner)
	return ok
}
