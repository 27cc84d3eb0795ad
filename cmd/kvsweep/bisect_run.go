//go:build !lite

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/bisect"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// runCells renders the probe's sweep (once), submits what was never
// submitted, follows it to the end (retrying infra failures) and collects
// it into the history store.
func (p *prober) runCells(ctx context.Context, e *env, c bisect.Commit, im *probeImage, dir string) (*testrun.Run, error) {
	if _, err := os.Stat(filepath.Join(dir, sweep.ManifestFile)); err != nil {
		if err := p.render(c, im, dir); err != nil {
			return nil, err
		}
		_ = bisect.Journal(p.o.out, "render", c.SHA, dir)
	}
	so := &submitOpts{sched: p.o.sched, store: p.o.store, quiet: true, opts: scheduler.SubmitOptions{Overrides: map[string]string{}}}
	_ = bisect.Journal(p.o.out, "submit", c.SHA, dir)
	if err := so.submit(e, dir, nil); err != nil {
		return nil, err
	}
	_, sched, err := openSweep(e, dir, p.o.sched)
	if err != nil {
		return nil, err
	}
	if _, err := scheduler.Watch(ctx, dir, sched, scheduler.FollowOptions{Interval: p.o.interval, Retried: retried(e), Paced: paced(e), Submit: so.opts}); err != nil {
		return nil, err
	}
	run, err := collect(e, dir, p.o.sched, testrun.CollectOptions{}, p.o.store, "")
	var notStored *history.NotStoredError
	if errors.As(err, &notStored) {
		fmt.Fprintf(e.stderr, "kvsweep bisect: %v\n", err)
	} else if err != nil {
		return nil, err
	}
	return run, nil
}

// render renders the chosen cells of the spec into dir, to run im, with
// at least one retry of infra failures.
func (p *prober) render(c bisect.Commit, im *probeImage, dir string) error {
	spec, cells, src, err := matrix.LoadCells(p.spec)
	if err != nil {
		return err
	}
	cells = slices.DeleteFunc(cells, func(cell matrix.Cell) bool { return !p.matches(cell) })
	if len(cells) == 0 {
		return usagef("--cells %s matches no cell of %s", p.o.cells, p.spec)
	}
	spec.Retry.Infra = max(spec.Retry.Infra, 1)
	opts := render.Options{SweepID: p.id + "-" + c.Short(), Version: version(), NoBinary: noBinary, Objects: renderObjects,
		Image: p.pullRef(im.Ref), Expect: im.Expect}
	_, err = render.Render(spec, src, cells, dir, opts)
	return err
}

// pullRef is the reference the jobs pull an image by: --pull-registry in
// place of the registry it was pushed to.
func (p *prober) pullRef(ref string) string { return pullRef(p.o.pull, ref) }

// pullRef is ref from registry instead of the one it names (none: as is).
func pullRef(registry, ref string) string {
	if registry == "" {
		return ref
	}
	_, rest, _ := strings.Cut(ref, "/")
	return registry + "/" + rest
}

// matches reports whether a cell has every --cells parameter (case=ID
// matches a cell that runs the case).
func (p *prober) matches(c matrix.Cell) bool {
	for _, f := range p.filters {
		if f.Key == "case" && slices.Contains(c.Cases, f.Value) {
			continue
		}
		if c.Params[f.Key] != f.Value {
			return false
		}
	}
	return true
}

// judge classifies a probe's run: cells that failed outside the test
// again after the retry make it a skip; then the gates, or the metric
// against the good end's.
func (p *prober) judge(ctx context.Context, run *testrun.Run, role bisect.Role) bisect.Outcome {
	if infra := infraFailures(run); infra != "" {
		if role == bisect.GoodEnd {
			p.setGood(nil)
		}
		return bisect.Outcome{Verdict: bisect.Skipped, Reason: "failed outside the test after a retry: " + infra}
	}
	if p.o.metric == "" {
		if role == bisect.GoodEnd {
			p.setGood(run)
		}
		if err := analysis.Check([]*testrun.Run{run}, nil, p.o.gates); err != nil {
			return bisect.Outcome{Verdict: bisect.Bad, Reason: firstLine(err.Error())}
		}
		return bisect.Outcome{Verdict: bisect.Good, Reason: run.CountsLine()}
	}
	return p.judgeMetric(ctx, run, role)
}

// judgeMetric compares the run's mean of --metric with the good end's.
func (p *prober) judgeMetric(ctx context.Context, run *testrun.Run, role bisect.Role) bisect.Outcome {
	v, dir, ok := meanMetric(run, p.o.metric)
	if role == bisect.GoodEnd {
		p.setGood(run)
	}
	if !ok {
		return bisect.Outcome{Verdict: bisect.Skipped, Reason: "no cell passed with " + p.o.metric}
	}
	if role == bisect.GoodEnd {
		return bisect.Outcome{Verdict: bisect.Good, Reason: fmt.Sprintf("%s %g", p.o.metric, v)}
	}
	good := p.waitGood(ctx)
	g, _, gok := meanMetric(good, p.o.metric)
	if good == nil || !gok || g == 0 {
		return bisect.Outcome{Verdict: bisect.Skipped, Reason: errNoGood.Error()}
	}
	thr, _ := parsePercent(p.o.threshold)
	change := (v - g) / g
	worse := change > thr
	if dir == "higher" {
		worse = change < -thr
	}
	reason := fmt.Sprintf("%s %g against %g on the good commit (%+.1f%%, threshold %s)", p.o.metric, v, g, 100*change, p.o.threshold)
	if worse {
		return bisect.Outcome{Verdict: bisect.Bad, Reason: reason}
	}
	return bisect.Outcome{Verdict: bisect.Good, Reason: reason}
}

// setGood makes the good end's run known to the probes waiting for it.
func (p *prober) setGood(run *testrun.Run) {
	p.goodMu.Lock()
	defer p.goodMu.Unlock()
	select {
	case <-p.goodDone:
	default:
		p.goodRun = run
		close(p.goodDone)
	}
}

func (p *prober) waitGood(ctx context.Context) *testrun.Run {
	select {
	case <-p.goodDone:
	case <-ctx.Done():
		return nil
	}
	p.goodMu.Lock()
	defer p.goodMu.Unlock()
	return p.goodRun
}

// loadGood reads the good end's run when an earlier run of the bisect
// probed it.
func (p *prober) loadGood(st *bisect.State) error {
	o := st.Probes[st.Commits[0].SHA]
	switch {
	case o == nil:
		return nil
	case o.Sweep == "":
		p.setGood(nil)
		return nil
	}
	run, err := testrun.ReadRun(o.Sweep)
	if err != nil {
		return err
	}
	p.setGood(run)
	return nil
}

// infraFailures names the cells whose last attempt failed outside the
// test ("" when none did).
func infraFailures(run *testrun.Run) string {
	var out []string
	for _, c := range run.Cells {
		if c.Class == testrun.ClassInfra {
			out = append(out, fmt.Sprintf("%s %s", c.Name, strings.TrimPrefix(testrun.OutcomeText(c), "MISSING ")))
		}
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return strings.Join(out, "; ")
}

// meanMetric is the mean of a metric over the passed cells' cases, and
// which way is better.
func meanMetric(run *testrun.Run, name string) (float64, string, bool) {
	if run == nil {
		return 0, "", false
	}
	sum, n, dir := 0.0, 0, "lower"
	for _, c := range run.Cells {
		if c.Outcome != testrun.OK {
			continue
		}
		for _, cs := range c.Cases {
			for _, m := range cs.Metrics {
				if m.Name == name {
					sum, n = sum+m.Value, n+1
					if m.Direction != "" {
						dir = m.Direction
					}
				}
			}
		}
	}
	if n == 0 {
		return 0, "", false
	}
	return sum / float64(n), dir, true
}

// note keeps the probe's verdict with its run in the history store.
func (p *prober) note(e *env, c bisect.Commit, o bisect.Outcome) {
	text := fmt.Sprintf("%s of %s %s..%s: %s is %s", p.id, p.o.component, p.o.good, p.o.bad, c.Line(), o.Verdict.Word())
	if o.Reason != "" {
		text += " (" + o.Reason + ")"
	}
	h := history.OpenLazy(p.o.store, false)
	defer h.Close()
	if _, err := history.Annotate(h, o.Sweep, testrun.Note{Author: "kvsweep bisect", Time: time.Now().UTC(), Text: text}); err != nil {
		fmt.Fprintf(e.stderr, "kvsweep bisect: the note on %s was not stored: %v\n", c.Short(), err)
	}
}

// commitsOf is the commit of each component an image records.
func commitsOf(r interface {
	Names() []string
	Commit(string) string
}) map[string]string {
	out := map[string]string{}
	for _, name := range r.Names() {
		out[name] = r.Commit(name)
	}
	return out
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// parsePercent reads "10%" (or "0.1") as 0.1.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("expected a percentage such as 10%%")
	}
	if strings.HasSuffix(s, "%") {
		v /= 100
	}
	return v, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
