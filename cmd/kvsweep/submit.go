package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// schedFlags are the flags that pick and configure the scheduler.
func schedFlags(fs *pflag.FlagSet) *scheduler.Config {
	c := &scheduler.Config{}
	fs.StringVar(&c.Name, "scheduler", "", "slurm, local or k8s (default: the scheduler of the sweep's last submission, else the spec's)")
	fs.DurationVar(&c.RetryDeadline, "retry-deadline", 10*time.Minute, "keep retrying transient errors of the Slurm controller or the Kubernetes API server this long")
	fs.IntVar(&c.Parallel, "parallel", 0, "local executor: tasks at once (default: number of CPUs)")
	fs.Float32Var(&c.KubeQPS, "kube-qps", 50, "Kubernetes: the client's requests per second to the API server (client-go's rate limit)")
	fs.IntVar(&c.KubeBurst, "kube-burst", 100, "Kubernetes: requests above --kube-qps the client may make at once")
	fs.StringVar(&c.GPUs, "gpus", "", "local executor: the GPU pool, e.g. 0,1 or all (nvidia-smi -L); each task gets its own gpus_per_node of them (default: GPUs not scheduled)")
	return c
}

// openSweep opens the sweep in dir with the scheduler cfg picks.
func openSweep(e *env, dir string, cfg *scheduler.Config) (*sweep.Manifest, scheduler.Scheduler, error) {
	c := *cfg
	c.Log = e.stderr
	return scheduler.Open(dir, c)
}

// interruptible is a context cancelled by Ctrl-C or SIGTERM.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// What a submission is called, and the scheduler, in what submit prints.
var (
	submitCall     = map[string]string{"slurm": "sbatch", "local": "local", "k8s": "Job create"}
	schedulerTitle = map[string]string{"slurm": "Slurm", "local": "the local executor", "k8s": "the Kubernetes API"}
)

type submitOpts struct {
	sched *scheduler.Config
	lock  string
	opts  scheduler.SubmitOptions
	store string
	// badNodes keeps nodes with at least this many infra failures in
	// the history store's recent runs out (0: off).
	badNodes  int
	badWindow time.Duration
	quiet     bool
}

func submitFlags(fs *pflag.FlagSet) *submitOpts {
	o := &submitOpts{sched: schedFlags(fs), opts: scheduler.SubmitOptions{Overrides: map[string]string{}}}
	fs.IntVar(&o.opts.MaxRunning, "max-running", 0, "at most N tasks of each array run at once (the array throttle %N)")
	for _, k := range []string{"partition", "account", "qos", "reservation"} {
		fs.Var(mapValue(o.opts.Overrides, k), k, "override the spec's cluster."+k)
	}
	fs.IntVar(&o.opts.MaxQueued, "max-queued", 0, "at most N of your tasks queued at once, each array task counting as one (over cluster.max_queued; by default the limits scontrol and sacctmgr show)")
	fs.BoolVar(&o.opts.Hold, "hold", false, "submit held (release with scontrol release)")
	fs.StringSliceVar(&o.opts.Exclude, "exclude", nil, "keep the jobs off these nodes (sbatch --exclude)")
	fs.BoolVar(&o.opts.DryRun, "dry-run", false, "print the sbatch command lines; submit nothing and ask the cluster nothing")
	if fs.Lookup("max-array-size") == nil { // run and ci have render's
		fs.IntVar(&o.opts.MaxArraySize, "max-array-size", 0, "split arrays at this many tasks (default: the cluster's MaxArraySize; 1001 with --dry-run)")
	}
	fs.StringVar(&o.lock, "lock", "", "hold a lease-backed lock per sweep in etcd while submitting: etcd://HOST:PORT/PREFIX")
	fs.IntVar(&o.badNodes, "exclude-bad-nodes", 0, "keep out nodes with at least N infra failures in the history store's recent runs (kvsweep nodes lists them)")
	fs.DurationVar(&o.badWindow, "bad-node-window", 7*24*time.Hour, "with --exclude-bad-nodes: how far back runs count")
	fs.StringVar(&o.store, "store", history.DefaultStorePath(), "history store: a bbolt file, or postgres://USER@HOST/DB; $KVSWEEP_STORE sets the default")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "show no progress while the local executor runs or --wait waits")
	return o
}

// excluded is --exclude and, with --exclude-bad-nodes, the ledger's bad
// nodes, said on stderr.
func (o *submitOpts) excluded(e *env) ([]string, error) {
	if o.badNodes <= 0 {
		return o.opts.Exclude, nil
	}
	h := history.OpenLazy(o.store, true)
	defer h.Close()
	ledger, err := analysis.LedgerFromStore(h, o.badWindow, time.Now())
	if err != nil {
		return nil, err
	}
	bad := analysis.Exclusions(ledger, o.badNodes)
	if len(bad) > 0 {
		fmt.Fprintf(e.stderr, "kvsweep: keeping out %d node(s) with at least %d infra failure(s) in the last %s: %s\n", len(bad), o.badNodes, o.badWindow, strings.Join(bad, ", "))
	}
	return append(append([]string(nil), o.opts.Exclude...), bad...), nil
}

// submit submits the cells of dir in only (nil: every unsubmitted cell);
// the local executor runs them before it returns.
func (o *submitOpts) submit(e *env, dir string, only map[string]bool) error {
	m, sched, err := openSweep(e, dir, o.sched)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	if o.lock != "" && !o.opts.DryRun {
		release, err := lockURL(ctx, o.lock, m.SweepID)
		if err != nil {
			return err
		}
		defer release()
	}
	opts := o.opts
	opts.Only, opts.Out = only, e.stdout
	if opts.Exclude, err = o.excluded(e); err != nil {
		return err
	}
	opts.Submitted = func(rep *scheduler.SubmitReport) {
		fmt.Fprintf(e.stdout, "submitted %d cells of sweep %s in %d %s calls\n", rep.Cells, m.SweepID, rep.Calls, submitCall[sched.Name()])
	}
	stopProgress := o.localProgress(e, dir, sched, &opts)
	rep, err := scheduler.Submit(ctx, dir, sched, opts)
	stopProgress(rep)
	if rep != nil && rep.Adopted+rep.Abandoned > 0 {
		fmt.Fprintf(e.stderr, "kvsweep: settled earlier unconfirmed submissions: %d adopted from %s, %d never received\n", rep.Adopted, schedulerTitle[sched.Name()], rep.Abandoned)
	}
	if err == nil && rep.Waiting > 0 {
		fmt.Fprintf(e.stdout, "%d cells wait for room in the queue (%s): kvsweep status %s --watch, run --wait and ci submit them as room appears; or run kvsweep submit %s again\n",
			rep.Waiting, waitReason(rep), dir, dir)
	}
	if err == nil && rep.Final != nil {
		printLocalRun(e, m.SweepID, rep)
	}
	return err
}

// waitReason is why cells wait: sbatch's refusal, or the limit that
// leaves no room.
func waitReason(rep *scheduler.SubmitReport) string {
	if rep.Refused != "" || rep.Room == nil {
		return cmp.Or(rep.Refused, "sbatch refused a submission for a submit limit")
	}
	return rep.Room.String()
}

// localProgress shows the local executor's progress while Submit runs
// the cells (it runs them before it returns); the function it returns
// stops it with the final states.
func (o *submitOpts) localProgress(e *env, dir string, sched scheduler.Scheduler, opts *scheduler.SubmitOptions) func(*scheduler.SubmitReport) {
	var stopProgress func([]scheduler.CellStatus)
	if _, queue := sched.(scheduler.Queue); queue && !opts.DryRun {
		show := progress(e, o.quiet)
		submitted := opts.Submitted
		opts.Submitted = func(rep *scheduler.SubmitReport) {
			submitted(rep)
			stopProgress = followLocal(e, dir, sched, show)
		}
	}
	return func(rep *scheduler.SubmitReport) {
		if stopProgress == nil {
			return
		}
		var final []scheduler.CellStatus
		if rep != nil {
			final = rep.Final
		}
		stopProgress(final)
	}
}

// printLocalRun says how the cells the local executor ran ended, then the
// whole sweep when that is more.
func printLocalRun(e *env, sweepID string, rep *scheduler.SubmitReport) {
	var ran []scheduler.CellStatus
	for _, c := range rep.Final {
		job, _, _ := strings.Cut(c.Task, "_")
		if slices.Contains(rep.JobIDs, job) {
			ran = append(ran, c)
		}
	}
	fmt.Fprintf(e.stdout, "local executor finished %d cells: %s\n", len(ran), scheduler.CountsLine(ran))
	if len(ran) < len(rep.Final) {
		fmt.Fprintf(e.stdout, "sweep %s: %d cells: %s\n", sweepID, len(rep.Final), scheduler.CountsLine(rep.Final))
	}
}

func init() { register(submitCmd, resubmitCmd) }

var submitCmd = &command{
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
}

var resubmitCmd = &command{
	name:    "resubmit",
	args:    "DIR --failed|--missing",
	summary: "Submit again the cells that ended without success, or never ran",
	help: `--failed selects cells whose last attempt ended without success (FAILED,
TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, CANCELLED, PREEMPTED, BOOT_FAIL, DEADLINE,
LOST); --infra only those that failed outside the test (NODE_FAIL,
PREEMPTED, BOOT_FAIL, DEADLINE, LOST, or a job that ended before its
harness started), which a deterministic test failure never is; --missing
selects cells never submitted. Cells pending, running or completed are
never submitted again. The chosen cells go out as new arrays over exactly
their indices; --exclude keeps them off nodes.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := submitFlags(fs)
		var sel scheduler.Selection
		fs.BoolVar(&sel.Failed, "failed", false, "cells that ended without success")
		fs.BoolVar(&sel.Missing, "missing", false, "cells never submitted")
		fs.BoolVar(&sel.Infra, "infra", false, "cells that failed outside the test (node, preemption, a harness that never started)")
		return func(e *env, args []string) error {
			dir, err := oneArg(args, "the sweep directory")
			if err != nil {
				return err
			}
			if !sel.Failed && !sel.Missing && !sel.Infra {
				return usagef("say which cells: --failed, --infra, --missing (or several)")
			}
			cells, err := status(e, dir, o.sched)
			if err != nil {
				return err
			}
			if only := scheduler.Select(dir, cells, sel); len(only) > 0 {
				return o.submit(e, dir, only)
			}
			fmt.Fprintln(e.stdout, "nothing to resubmit")
			return nil
		}
	},
}

// mapValue is a string flag stored under key in m (set only when given).
func mapValue(m map[string]string, key string) pflag.Value { return &mapFlag{m, key} }

type mapFlag struct {
	m   map[string]string
	key string
}

func (f *mapFlag) String() string     { return f.m[f.key] }
func (f *mapFlag) Set(v string) error { f.m[f.key] = v; return nil }
func (f *mapFlag) Type() string       { return "string" }
