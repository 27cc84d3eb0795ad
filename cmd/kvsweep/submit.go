package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// schedFlags are the flags that pick and configure the scheduler of a
// command that runs cells (the local executor's among them).
func schedFlags(fs *pflag.FlagSet) *scheduler.Config { return schedulerFlags(fs, true) }

// querySchedFlags are schedFlags of a command that only asks about or
// stops cells (status, collect, logs, cancel): the local executor's
// --parallel and --gpus would do nothing there, so they are not offered.
func querySchedFlags(fs *pflag.FlagSet) *scheduler.Config { return schedulerFlags(fs, false) }

func schedulerFlags(fs *pflag.FlagSet, runs bool) *scheduler.Config {
	c := &scheduler.Config{}
	fs.StringVar(&c.Name, "scheduler", "", "slurm, local or k8s (default: the scheduler of the sweep's last submission, else the spec's)")
	fs.DurationVar(&c.RetryDeadline, "retry-deadline", 10*time.Minute, "keep retrying transient errors of the Slurm controller or the Kubernetes API server this long")
	if runs {
		fs.IntVar(&c.Parallel, "parallel", 0, "local executor: tasks at once (default: number of CPUs)")
	}
	fs.Float32Var(&c.KubeQPS, "kube-qps", 50, "Kubernetes: the client's requests per second to the API server (client-go's rate limit)")
	fs.IntVar(&c.KubeBurst, "kube-burst", 100, "Kubernetes: requests above --kube-qps the client may make at once")
	if runs {
		fs.StringVar(&c.GPUs, "gpus", "", "local executor: the GPU pool, e.g. 0,1 or all (nvidia-smi -L); each task gets its own gpus_per_node of them (default: GPUs not scheduled)")
	}
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

func submitFlags(fs *pflag.FlagSet) *lane.SubmitOptions {
	o := &lane.SubmitOptions{Sched: schedFlags(fs), Opts: scheduler.SubmitOptions{Overrides: map[string]string{}}}
	fs.IntVar(&o.Opts.MaxRunning, "max-running", 0, "at most N tasks of each array run at once (the array throttle %N)")
	for _, k := range []string{"partition", "account", "qos", "reservation"} {
		fs.Var(mapValue(o.Opts.Overrides, k), k, "override the spec's cluster."+k)
	}
	fs.IntVar(&o.Opts.MaxQueued, "max-queued", 0, "at most N of your tasks queued at once, each array task counting as one (over cluster.max_queued; by default the limits scontrol and sacctmgr show)")
	fs.BoolVar(&o.Opts.Hold, "hold", false, "submit held (release with scontrol release)")
	fs.StringSliceVar(&o.Opts.Exclude, "exclude", nil, "keep the jobs off these nodes (sbatch --exclude)")
	fs.BoolVar(&o.Opts.DryRun, "dry-run", false, "print the sbatch command lines; submit nothing and ask the cluster nothing")
	if fs.Lookup("max-array-size") == nil { // run and ci have render's
		fs.IntVar(&o.Opts.MaxArraySize, "max-array-size", 0, "split arrays at this many tasks (default: the cluster's MaxArraySize; 1001 with --dry-run)")
	}
	fs.StringVar(&o.Lock, "lock", "", "hold a lease-backed lock per sweep in etcd while submitting: etcd://HOST:PORT/PREFIX")
	fs.IntVar(&o.BadNodes, "exclude-bad-nodes", 0, "keep out nodes with at least N infra failures in the history store's recent runs (kvsweep nodes lists them)")
	fs.DurationVar(&o.BadWindow, "bad-node-window", 7*24*time.Hour, "with --exclude-bad-nodes: how far back runs count")
	fs.StringVar(&o.Store, "store", history.DefaultStorePath(), "history store: a bbolt file, or postgres://USER@HOST/DB; $KVSWEEP_STORE sets the default")
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, "show no progress while the local executor runs or --wait waits")
	return o
}

// submit submits the cells of dir in only (nil: every unsubmitted cell)
// as o says (lane.SubmitDir); the local executor runs them before it
// returns.
func submit(e *env, o *lane.SubmitOptions, dir string, only map[string]bool) error {
	l := newLane(e)
	l.Submit = *o
	ctx, stop := interruptible()
	defer stop()
	return l.SubmitDir(ctx, dir, only)
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
			return submit(e, o, dir, nil)
		}
	},
}

var resubmitCmd = &command{
	name:    "resubmit",
	args:    "DIR --failed|--missing",
	summary: "Submit again the cells that ended without success, or never ran",
	help: `--failed selects cells whose last attempt ended without success (FAILED,
TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, CANCELLED, PREEMPTED, BOOT_FAIL, DEADLINE,
LOST); --infra only those that failed outside the test (NODE_FAIL, PREEMPTED,
BOOT_FAIL, DEADLINE, LOST, a job that ended before its harness started, or
GPUs that failed under it), which a deterministic test failure never is; --missing
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
			cells, err := status(e, dir, o.Sched)
			if err != nil {
				return err
			}
			if only := scheduler.Select(dir, cells, sel); len(only) > 0 {
				return submit(e, o, dir, only)
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
