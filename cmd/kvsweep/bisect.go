//go:build !lite

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/bisect"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
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
	component, good, bad string
	cells, out, pins     string
	push, addr, pull     string
	mediaTypes           string
	metric, threshold    string
	all, insecure        bool
	parallel             int
	sched                *scheduler.Config
	store                string
	interval             time.Duration
	gates                analysis.Gates
}

func bisectFlags(fs *pflag.FlagSet) *bisectOpts {
	o := &bisectOpts{sched: &scheduler.Config{}}
	fs.StringVar(&o.component, "component", "kvcr", "the component whose commits are searched (a name in the pins file)")
	fs.StringVar(&o.good, "good", "", "a commit the cells pass on (required)")
	fs.StringVar(&o.bad, "bad", "", "a later commit they fail on (required)")
	fs.BoolVar(&o.all, "all", false, "search every commit between them, not only the first-parent line")
	fs.StringVar(&o.cells, "cells", "", "KEY=VALUE[,KEY=VALUE]: run only the cells whose parameters match")
	fs.IntVar(&o.parallel, "parallel", 1, "commits probed at once in each round (a k-ary search: fewer rounds)")
	fs.StringVar(&o.out, "out", "", "the bisect's directory: its state, images' records and probe sweeps (required)")
	fs.StringVar(&o.pins, "pins", "", "pins file (default: the spec's container.pins)")
	fs.StringVar(&o.push, "push", "", "repository the probe images are pushed to, REGISTRY/NAME (required)")
	fs.StringVar(&o.pull, "pull-registry", "", "HOST[:PORT] the jobs pull the probe images from, when not --push's registry (a mirror, or the nodes' own address for it)")
	fs.StringVar(&o.addr, "buildkit-addr", "", "buildkitd address (default $BUILDKIT_HOST, else the rootful socket)")
	fs.StringVar(&o.mediaTypes, "media-types", "oci", "oci or docker manifests (enroot needs docker with some registries)")
	fs.BoolVar(&o.insecure, "insecure-registry", false, "the registry speaks plain HTTP")
	fs.StringVar(&o.metric, "metric", "", "judge by this metric's mean against the good end's, not by the verdicts")
	fs.StringVar(&o.threshold, "threshold", "10%", "with --metric: the change for the worse that makes a commit bad")
	fs.BoolVar(&o.gates.RequireProvenance, "require-provenance", false, "fail a cell that ran without the image's source-revisions.json")
	fs.StringVar(&o.sched.Name, "scheduler", "", "slurm, local or k8s (default: the spec's)")
	fs.DurationVar(&o.sched.RetryDeadline, "retry-deadline", 10*time.Minute, "keep retrying transient errors of the Slurm controller or the Kubernetes API server this long")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "time between polls of a probe's sweep")
	fs.StringVar(&o.store, "store", history.DefaultStorePath(), "history store: a bbolt file, or postgres://USER@HOST/DB; $KVSWEEP_STORE sets the default")
	return o
}

// args are what a bisect directory must be started again with.
func (o *bisectOpts) args(spec string) map[string]string {
	return map[string]string{"spec": spec, "component": o.component, "good": o.good, "bad": o.bad,
		"cells": o.cells, "metric": o.metric, "threshold": o.threshold, "push": o.push}
}

func (o *bisectOpts) run(e *env, specArg string) error {
	if o.good == "" || o.bad == "" || o.out == "" || o.push == "" {
		return usagef("--good, --bad, --push and --out are required")
	}
	spec, err := filepath.Abs(specArg)
	if err != nil {
		return err
	}
	p, err := newProber(e, o, spec)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	st, err := p.state(ctx)
	if err != nil {
		return err
	}
	if err := p.loadGood(st); err != nil {
		return err
	}
	a, err := bisect.Run(ctx, o.out, st, p, e.stderr)
	if err != nil {
		return err
	}
	return o.answer(e, st, a)
}

// answer prints and keeps the answer, and compares the last good probe
// with the first bad one.
func (o *bisectOpts) answer(e *env, st *bisect.State, a *bisect.Answer) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := sweep.WriteFileAtomic(filepath.Join(o.out, "answer.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprint(e.stdout, a.String())
	bad := a.FirstBad
	if bad == nil {
		bad = &a.Range[len(a.Range)-1]
	}
	good, worse := st.Probes[a.LastGood.SHA], st.Probes[bad.SHA]
	fmt.Fprintf(e.stdout, "probes: %s (last good), %s (first bad)\n", good.Sweep, worse.Sweep)
	base, err := testrun.ReadRun(good.Sweep)
	if err != nil {
		return err
	}
	cand, err := testrun.ReadRun(worse.Sweep)
	if err != nil {
		return err
	}
	opts, err := analysis.ParseThresholds(o.threshold, nil)
	if err != nil {
		return err
	}
	cmp := analysis.Compare(a.LastGood.Short()+" (last good)", []*testrun.Run{base}, bad.Short()+" (first bad)", []*testrun.Run{cand}, opts)
	fmt.Fprintln(e.stdout)
	return reports.WriteComparison(e.stdout, "markdown", cmp)
}

// writeJSON writes v to path atomically.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return sweep.WriteFileAtomic(path, b, 0o644)
}
