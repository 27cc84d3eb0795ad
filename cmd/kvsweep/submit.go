package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/coord"
	"github.com/kvsweep/kvsweep/sbatch"
	"github.com/kvsweep/kvsweep/sweep"
)

// schedOpts are the flags that pick and configure the scheduler.
type schedOpts struct {
	scheduler     string
	retryDeadline time.Duration
	parallel      int
}

func schedFlags(fs *pflag.FlagSet) *schedOpts {
	o := &schedOpts{}
	fs.StringVar(&o.scheduler, "scheduler", "", "slurm or local (default: the spec's scheduler)")
	fs.DurationVar(&o.retryDeadline, "retry-deadline", 10*time.Minute, "keep retrying transient Slurm controller errors this long")
	fs.IntVar(&o.parallel, "parallel", 0, "local executor: tasks at once (default: number of CPUs)")
	return o
}

// pick returns the scheduler for the sweep in dir: --scheduler, else the
// one its last submission used, else the spec's.
func (o *schedOpts) pick(e *env, dir string, m *sweep.Manifest) (sbatch.Scheduler, error) {
	name := o.scheduler
	if name == "" {
		recs, _ := sweep.ReadJournal(dir)
		for _, r := range recs {
			if r.Type == sweep.RecIntent {
				name = r.Scheduler
			}
		}
	}
	if name == "" {
		name = m.Scheduler
	}
	switch name {
	case "slurm", "":
		return &sbatch.Slurm{Deadline: o.retryDeadline, Log: e.stderr}, nil
	case "local":
		return &sbatch.Local{Dir: dir, Parallel: o.parallel, Log: e.stderr}, nil
	}
	return nil, usagef("--scheduler %q: expected slurm or local", name)
}

// open reads the sweep directory's manifest and picks its scheduler.
func (o *schedOpts) open(e *env, dir string) (*sweep.Manifest, sbatch.Scheduler, error) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	sched, err := o.pick(e, dir, m)
	return m, sched, err
}

// interruptible is a context cancelled by Ctrl-C or SIGTERM.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

type submitOpts struct {
	lock       string
	sched      *schedOpts
	maxRunning int
	hold       bool
	dryRun     bool
	overrides  map[string]*string
}

func submitFlags(fs *pflag.FlagSet) *submitOpts {
	o := &submitOpts{sched: schedFlags(fs), overrides: map[string]*string{}}
	fs.IntVar(&o.maxRunning, "max-running", 0, "at most N tasks of each array run at once (the array throttle %N)")
	for _, k := range []string{"partition", "account", "qos", "reservation"} {
		o.overrides[k] = fs.String(k, "", "override the spec's cluster."+k)
	}
	fs.BoolVar(&o.hold, "hold", false, "submit held (release with scontrol release)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the sbatch command lines; submit nothing")
	fs.StringVar(&o.lock, "lock", "", "hold a lease-backed lock per sweep in etcd while submitting: etcd://HOST:PORT/PREFIX")
	return o
}

// takeLock takes the etcd lock of --lock, if given; release it when done.
func (o *submitOpts) takeLock(ctx context.Context, sweepID string) (release func(), err error) {
	if o.lock == "" {
		return func() {}, nil
	}
	rest, ok := strings.CutPrefix(o.lock, "etcd://")
	hostport, prefix, _ := strings.Cut(rest, "/")
	if !ok || hostport == "" {
		return nil, usagef("--lock %q: expected etcd://HOST:PORT/PREFIX", o.lock)
	}
	c, err := coord.Dial(hostport)
	if err != nil {
		return nil, err
	}
	l, err := coord.TryLock(ctx, c, "/"+prefix, sweepID, 10*time.Second)
	if err != nil {
		c.Close()
		return nil, err
	}
	return func() {
		_ = l.Unlock(context.Background())
		c.Close()
	}, nil
}

// submit runs sbatch.Submit on dir with only (nil: every unsubmitted cell),
// and with the local executor runs the tasks to the end.
func (o *submitOpts) submit(e *env, dir string, only map[string]bool) error {
	m, sched, err := o.sched.open(e, dir)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	if !o.dryRun {
		release, err := o.takeLock(ctx, m.SweepID)
		if err != nil {
			return err
		}
		defer release()
	}
	opts := sbatch.SubmitOptions{Only: only, MaxRunning: o.maxRunning, Hold: o.hold, DryRun: o.dryRun,
		Out: e.stdout, Overrides: map[string]string{}}
	for k, v := range o.overrides {
		opts.Overrides[k] = *v
	}
	var j *sweep.Journal
	if !o.dryRun {
		if j, err = sweep.OpenJournal(dir); err != nil {
			return err
		}
		defer j.Close()
	}
	local, isLocal := sched.(*sbatch.Local)
	if isLocal {
		local.Journal = j
		if o.maxRunning > 0 && (local.Parallel == 0 || o.maxRunning < local.Parallel) {
			local.Parallel = o.maxRunning
		}
	}
	rep, err := sbatch.Submit(ctx, j, dir, sched, opts)
	if rep != nil && (rep.Adopted > 0 || rep.Abandoned > 0) {
		fmt.Fprintf(e.stderr, "kvsweep: settled earlier unconfirmed submissions: %d adopted from Slurm, %d never received\n", rep.Adopted, rep.Abandoned)
	}
	if err != nil {
		return err
	}
	if o.dryRun {
		return nil
	}
	fmt.Fprintf(e.stdout, "submitted %d cells of sweep %s in %d %s calls\n", rep.Cells, m.SweepID, rep.Calls, map[bool]string{true: "local", false: "sbatch"}[isLocal])
	if isLocal && rep.Cells > 0 {
		if err := local.Wait(ctx); err != nil {
			return fmt.Errorf("interrupted: running tasks were terminated and are recorded as CANCELLED")
		}
		cells, _, err := sbatch.Status(context.Background(), dir, sched)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "local executor finished: %s\n", sbatch.CountsLine(cells))
	}
	return nil
}

func init() {
	register(&command{
		name:    "submit",
		args:    "DIR",
		summary: "Submit a rendered sweep's cells that were never submitted",
		help: `Submits every cell of the sweep directory DIR that has not been submitted,
one sbatch call per job array (split at the cluster's MaxArraySize), and
records each in DIR/state.jsonl. Running it again submits nothing twice: a
submission interrupted after sbatch returned is found in Slurm by its job
name and adopted. Transient controller errors are retried until
--retry-deadline; a refused submission stops at once with Slurm's message.
With --scheduler local the tasks run on this machine before submit returns;
Ctrl-C terminates them.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			o := submitFlags(fs)
			return func(e *env, args []string) error {
				dir, err := oneArg(args, "the sweep directory")
				if err != nil {
					return err
				}
				return o.submit(e, dir, nil)
			}
		},
	})
	register(&command{
		name:    "resubmit",
		args:    "DIR --failed|--missing",
		summary: "Submit again the cells that ended without success, or never ran",
		help: `--failed selects cells whose last attempt ended without success (FAILED,
TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, CANCELLED, PREEMPTED, BOOT_FAIL, DEADLINE,
LOST); --missing selects cells never submitted. Cells pending, running or
completed are never submitted again. The chosen cells go out as new arrays
over exactly their indices.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			o := submitFlags(fs)
			failed := fs.Bool("failed", false, "cells that ended without success")
			missing := fs.Bool("missing", false, "cells never submitted")
			return func(e *env, args []string) error {
				dir, err := oneArg(args, "the sweep directory")
				if err != nil {
					return err
				}
				if !*failed && !*missing {
					return usagef("say which cells: --failed, --missing or both")
				}
				_, sched, err := o.sched.open(e, dir)
				if err != nil {
					return err
				}
				cells, _, err := sbatch.Status(context.Background(), dir, sched)
				if err != nil {
					return err
				}
				only := map[string]bool{}
				for _, c := range cells {
					if (*failed && sbatch.Terminal(c.State) && c.State != sbatch.StateCompleted) ||
						(*missing && c.State == sbatch.StateNotSubmitted) {
						only[c.ID] = true
					}
				}
				if len(only) == 0 {
					fmt.Fprintln(e.stdout, "nothing to resubmit")
					return nil
				}
				return o.submit(e, dir, only)
			}
		},
	})
}
