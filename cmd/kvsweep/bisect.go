//go:build !lite

package main

import (
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
)

func init() { register(bisectCmd) }

var bisectCmd = &command{
	name:    "bisect",
	args:    "SPEC --component NAME --good REV --bad REV --push REPO --out DIR",
	summary: "Find the commit of a component that broke the cells: images built and probed on the cluster",
	help: `Lists the commits of the component from --good to --bad (its checkout, or
a mirror of its repository in DIR; the first-parent line unless --all),
probes the two ends first (good must be good and bad bad, or the bisect
stops and says so), then rounds of --parallel probes: an image built with
BuildKit from the spec's pins with the component at the commit (pushed to
REPO:bisect-NAME-COMMIT, reused when it is already there), the chosen cells
(--cells KEY=VALUE,...) run in it on the spec's scheduler under retry.infra
of at least 1, the run collected into the history store with a note, and
judged: by report --check's gates, or with --metric by the metric's mean
against the good end's (--threshold). A commit that does not build, or
whose cells fail outside the test again after the retry, is skipped. The
answer is the first bad commit (or the range skipped commits leave), its
subject and author, and the comparison of the last good and first bad
probes. State lives in DIR: a bisect killed at any moment and started
again goes on where it was. See docs/bisect.md.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := bisectFlags(fs)
		return func(e *env, args []string) error {
			spec, err := oneArg(args, "the spec file")
			if err != nil {
				return err
			}
			return o.run(e, spec)
		}
	},
}

type bisectOpts struct {
	probe    lane.ProbeOptions
	sched    *scheduler.Config
	store    string
	interval time.Duration
}

func bisectFlags(fs *pflag.FlagSet) *bisectOpts {
	o := &bisectOpts{sched: &scheduler.Config{}}
	o.probe.Flags(fs)
	fs.StringVar(&o.sched.Name, "scheduler", "", "slurm, local or k8s (default: the spec's)")
	fs.DurationVar(&o.sched.RetryDeadline, "retry-deadline", 10*time.Minute, "keep retrying transient errors of the Slurm controller or the Kubernetes API server this long")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "time between polls of a probe's sweep")
	fs.StringVar(&o.store, "store", history.DefaultStorePath(), "history store: a bbolt file, or postgres://USER@HOST/DB; $KVSWEEP_STORE sets the default")
	return o
}

// run bisects: the prober lane.NewProber checks the flags and the spec,
// then probes the commits until the answer.
func (o *bisectOpts) run(e *env, specArg string) error {
	spec, err := filepath.Abs(specArg)
	if err != nil {
		return err
	}
	l := schedLane(e, o.sched, o.store)
	l.Interval = o.interval
	p, err := lane.NewProber(l, o.probe, spec)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	_, err = p.Bisect(ctx)
	return err
}
