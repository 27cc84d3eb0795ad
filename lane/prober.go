package lane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/bisect"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// ProbeOptions are a bisect's: what it searches, where it keeps its
// state, how it builds the probes' images and how it judges them.
type ProbeOptions struct {
	Component, Good, Bad string
	// Cells (KEY=VALUE,...) chooses the cells run; "": all.
	Cells string
	// Out is the bisect's directory: its state, images' records and
	// probe sweeps.
	Out string
	// Pins is the pins file ("": the spec's container.pins).
	Pins string
	// Push is the repository the probe images are pushed to; Pull, when
	// set, the registry the jobs pull them from.
	Push, Pull       string
	Addr, MediaTypes string
	Insecure         bool
	// Metric, when set, judges by its mean against the good end's, a
	// change for the worse past Threshold being bad; else the gates.
	Metric, Threshold string
	Gates             analysis.Gates
	All               bool
	Parallel          int
}

// args are what a bisect directory must be started again with.
func (o *ProbeOptions) args(spec string) map[string]string {
	return map[string]string{"spec": spec, "component": o.Component, "good": o.Good, "bad": o.Bad,
		"cells": o.Cells, "metric": o.Metric, "threshold": o.Threshold, "push": o.Push}
}

// Prober probes commits of a bisect (a bisect.Prober): the image at the
// commit, the chosen cells run in it on the spec's scheduler, the run
// collected into the history store with a note, and judged.
type Prober struct {
	lane    *Lane
	o       ProbeOptions
	spec    string
	pins    *Pins
	filters []history.Filter
	id      string

	goodMu   sync.Mutex
	goodRun  *testrun.Run
	goodDone chan struct{}
}

// NewProber checks what a bisect of spec (an absolute path) needs before
// it builds or submits anything. The lane gives the writers, the tools,
// the scheduler, the history store and the interval of the polls.
func NewProber(l *Lane, o ProbeOptions, spec string) (*Prober, error) {
	if o.Good == "" || o.Bad == "" || o.Out == "" || o.Push == "" {
		return nil, fail.Usagef("--good, --bad, --push and --out are required")
	}
	s, _, _, err := matrix.LoadCells(spec)
	if err != nil {
		return nil, err
	}
	if !s.RunsImage() {
		return nil, fail.Usagef("%s runs no container image (container.runtime %s): a bisect probes images", spec, s.Container.Runtime)
	}
	pinsPath := o.Pins
	if pinsPath == "" && s.Container.Pins != "" {
		pinsPath = specRelative(spec, s.Container.Pins)
	}
	if pinsPath == "" {
		return nil, fail.Usagef("no pins file: give --pins, or set the spec's container.pins")
	}
	im, err := l.images("bisect builds images")
	if err != nil {
		return nil, err
	}
	p := &Prober{lane: l, o: o, spec: spec, goodDone: make(chan struct{})}
	if p.pins, err = im.Pins(pinsPath); err != nil {
		return nil, err
	}
	if p.pins.Component(o.Component) == nil {
		return nil, fail.Usagef("--component %q is not in %s", o.Component, pinsPath)
	}
	if o.Cells != "" {
		if p.filters, err = history.ParseFilters(strings.Split(o.Cells, ",")); err != nil {
			return nil, fail.Usagef("--cells: %v", err)
		}
	}
	if o.Metric != "" {
		if _, err := parsePercent(o.Threshold); err != nil {
			return nil, fail.Usagef("--threshold %q: %v", o.Threshold, err)
		}
	}
	return p, os.MkdirAll(o.Out, 0o755)
}

// Bisect runs the bisect to its answer (or goes on with the one in Out),
// keeps the answer in Out/answer.json, prints it and compares the last
// good probe with the first bad one.
func (p *Prober) Bisect(ctx context.Context) (*bisect.Answer, error) {
	st, err := p.State(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.LoadGood(st); err != nil {
		return nil, err
	}
	a, err := bisect.Run(ctx, p.o.Out, st, p, p.lane.Stderr)
	if err != nil {
		return nil, err
	}
	return a, p.answer(st, a)
}

// State loads the bisect in Out, or starts one: the component's commits
// from good to bad.
func (p *Prober) State(ctx context.Context) (*bisect.State, error) {
	args := p.o.args(p.spec)
	st, err := bisect.Load(p.o.Out)
	if err != nil || st != nil {
		// Going on with a bisect needs no repository: its commits are in
		// its state.
		if st != nil {
			p.id = st.ID
			err = st.Check(p.o.Out, args)
		}
		return st, err
	}
	repo, err := ComponentRepo(ctx, p.pins.Component(p.o.Component), p.o.Out)
	if err != nil {
		return nil, err
	}
	commits, err := bisect.Commits(ctx, repo, p.o.Good, p.o.Bad, p.o.All)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	p.id = "bisect-" + hex.EncodeToString(b)
	st = bisect.New(p.id, args, p.o.Parallel, commits)
	fmt.Fprintf(p.lane.Stderr, "kvsweep bisect: %d commits of %s from %s to %s; %d at a time\n", len(commits), p.o.Component, commits[0].Short(), commits[len(commits)-1].Short(), st.K)
	return st, st.Save(p.o.Out)
}

// answer prints and keeps the answer, and compares the last good probe
// with the first bad one.
func (p *Prober) answer(st *bisect.State, a *bisect.Answer) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := sweep.WriteFileAtomic(filepath.Join(p.o.Out, "answer.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	w := p.lane.Stdout
	fmt.Fprint(w, a.String())
	bad := a.FirstBad
	if bad == nil {
		bad = &a.Range[len(a.Range)-1]
	}
	good, worse := st.Probes[a.LastGood.SHA], st.Probes[bad.SHA]
	fmt.Fprintf(w, "probes: %s (last good), %s (first bad)\n", good.Sweep, worse.Sweep)
	base, err := testrun.ReadRun(good.Sweep)
	if err != nil {
		return err
	}
	cand, err := testrun.ReadRun(worse.Sweep)
	if err != nil {
		return err
	}
	opts, err := analysis.ParseThresholds(p.o.Threshold, nil)
	if err != nil {
		return err
	}
	cmp := analysis.Compare(a.LastGood.Short()+" (last good)", []*testrun.Run{base}, bad.Short()+" (first bad)", []*testrun.Run{cand}, opts)
	fmt.Fprintln(w)
	return reports.WriteComparison(w, "markdown", cmp)
}

// Probe probes commit c (see bisect.Prober).
func (p *Prober) Probe(ctx context.Context, c bisect.Commit, role bisect.Role) (bisect.Outcome, error) {
	dir := filepath.Join(p.o.Out, bisect.ProbesDir, c.Short())
	l := p.probeLane(c)
	im, skip, err := p.image(ctx, c, dir)
	if err != nil || skip != "" {
		if role == bisect.GoodEnd {
			p.setGood(nil)
		}
		return bisect.Outcome{Verdict: bisect.Skipped, Reason: skip}, err
	}
	run, err := p.runCells(ctx, l, c, im, filepath.Join(dir, "sweep"))
	if err != nil {
		return bisect.Outcome{}, err
	}
	o := p.judge(ctx, run, role)
	o.Image, o.Sweep, o.RunID = im.Ref, filepath.Join(dir, "sweep"), run.ID
	p.note(l, c, o)
	return o, nil
}

// probeLane is the lane a probe's cells run in: quiet, its lines
// prefixed with the commit.
func (p *Prober) probeLane(c bisect.Commit) *Lane {
	return &Lane{Stdout: Prefixed(p.lane.Stdout, c.Short()), Stderr: Prefixed(p.lane.Stderr, c.Short()), Tools: p.lane.Tools,
		Submit:   SubmitOptions{Sched: p.lane.Submit.Sched, Store: p.lane.Submit.Store, Quiet: true, Opts: scheduler.SubmitOptions{Overrides: map[string]string{}}},
		Interval: p.lane.Interval}
}

// image is the probe's image, built or found.
func (p *Prober) image(ctx context.Context, c bisect.Commit, dir string) (*Image, string, error) {
	return p.lane.image(ctx, ImageRequest{Pins: p.pins.File, Refs: map[string]string{p.o.Component: c.SHA},
		Tag: fmt.Sprintf("%s:bisect-%s-%s", p.o.Push, p.o.Component, c.Short()), Dir: dir,
		Addr: p.o.Addr, MediaTypes: p.o.MediaTypes, Insecure: p.o.Insecure,
		Journal: func(event, detail string) { _ = bisect.Journal(p.o.Out, event, c.SHA, detail) }})
}

// A Prober is what bisect.Run asks.
var _ bisect.Prober = (*Prober)(nil)

var errNoGood = errors.New("the good end's probe gave no run to compare with")
