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
	p := &o.probe
	fs.StringVar(&p.Component, "component", "kvcr", "the component whose commits are searched (a name in the pins file)")
	fs.StringVar(&p.Good, "good", "", "a commit the cells pass on (required)")
	fs.StringVar(&p.Bad, "bad", "", "a later commit they fail on (required)")
	fs.BoolVar(&p.All, "all", false, "search every commit between them, not only the first-parent line")
	fs.StringVar(&p.Cells, "cells", "", "KEY=VALUE[,KEY=VALUE]: run only the cells whose parameters match")
	fs.IntVar(&p.Parallel, "parallel", 1, "commits probed at once in each round (a k-ary search: fewer rounds)")
	fs.StringVar(&p.Out, "out", "", "the bisect's directory: its state, images' records and probe sweeps (required)")
	fs.StringVar(&p.Pins, "pins", "", "pins file (default: the spec's container.pins)")
	fs.StringVar(&p.Push, "push", "", "repository the probe images are pushed to, REGISTRY/NAME (required)")
	fs.StringVar(&p.Pull, "pull-registry", "", "HOST[:PORT] the jobs pull the probe images from, when not --push's registry (a mirror, or the nodes' own address for it)")
	fs.StringVar(&p.Addr, "buildkit-addr", "", "buildkitd address (default $BUILDKIT_HOST, else the rootful socket)")
	fs.StringVar(&p.MediaTypes, "media-types", "oci", "oci or docker manifests (enroot needs docker with some registries)")
	fs.BoolVar(&p.Insecure, "insecure-registry", false, "the registry speaks plain HTTP")
	fs.StringVar(&p.Metric, "metric", "", "judge by this metric's mean against the good end's, not by the verdicts")
	fs.StringVar(&p.Threshold, "threshold", "10%", "with --metric: the change for the worse that makes a commit bad")
	fs.BoolVar(&p.Gates.RequireProvenance, "require-provenance", false, "fail a cell that ran without the image's source-revisions.json")
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
