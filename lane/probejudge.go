package lane

import (
	"context"
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
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// runCells renders the probe's sweep (once), submits what was never
// submitted, follows it to the end (retrying infra failures) and collects
// it into the history store.
func (p *Prober) runCells(ctx context.Context, l *Lane, c bisect.Commit, im *Image, dir string) (*testrun.Run, error) {
	if _, err := os.Stat(filepath.Join(dir, sweep.ManifestFile)); err != nil {
		if err := p.render(c, im, dir); err != nil {
			return nil, err
		}
		_ = bisect.Journal(p.o.Out, "render", c.SHA, dir)
	}
	_ = bisect.Journal(p.o.Out, "submit", c.SHA, dir)
	if err := l.SubmitDir(ctx, dir, nil); err != nil {
		return nil, err
	}
	if _, err := l.Watch(ctx, dir); err != nil {
		return nil, err
	}
	run, err := l.Collect(dir, testrun.CollectOptions{}, "")
	var notStored *history.NotStoredError
	if errors.As(err, &notStored) {
		fmt.Fprintf(l.Stderr, "kvsweep bisect: %v\n", err)
	} else if err != nil {
		return nil, err
	}
	return run, nil
}

// render renders the chosen cells of the spec into dir, to run im, with
// at least one retry of infra failures.
func (p *Prober) render(c bisect.Commit, im *Image, dir string) error {
	spec, cells, src, err := matrix.LoadCells(p.spec)
	if err != nil {
		return err
	}
	cells = slices.DeleteFunc(cells, func(cell matrix.Cell) bool { return !p.matches(cell) })
	if len(cells) == 0 {
		return fail.Usagef("--cells %s matches no cell of %s", p.o.Cells, p.spec)
	}
	spec.Retry.Infra = max(spec.Retry.Infra, 1)
	t := p.lane.Tools
	opts := render.Options{SweepID: p.id + "-" + c.Short(), Version: t.Version, NoBinary: t.NoBinary, Objects: t.Objects,
		Image: PullRef(p.o.Pull, im.Ref), Expect: im.Expect}
	_, err = render.Render(spec, src, cells, dir, opts)
	return err
}

// matches reports whether a cell has every --cells parameter (case=ID
// matches a cell that runs the case).
func (p *Prober) matches(c matrix.Cell) bool {
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
func (p *Prober) judge(ctx context.Context, run *testrun.Run, role bisect.Role) bisect.Outcome {
	if infra := infraFailures(run); infra != "" {
		if role == bisect.GoodEnd {
			p.setGood(nil)
		}
		return bisect.Outcome{Verdict: bisect.Skipped, Reason: "failed outside the test after a retry: " + infra}
	}
	if p.o.Metric == "" {
		if role == bisect.GoodEnd {
			p.setGood(run)
		}
		if err := analysis.Check([]*testrun.Run{run}, nil, p.o.Gates); err != nil {
			return bisect.Outcome{Verdict: bisect.Bad, Reason: firstLine(err.Error())}
		}
		return bisect.Outcome{Verdict: bisect.Good, Reason: run.CountsLine()}
	}
	return p.judgeMetric(ctx, run, role)
}

// judgeMetric compares the run's mean of the metric with the good end's.
func (p *Prober) judgeMetric(ctx context.Context, run *testrun.Run, role bisect.Role) bisect.Outcome {
	v, dir, ok := meanMetric(run, p.o.Metric)
	if role == bisect.GoodEnd {
		p.setGood(run)
	}
	if !ok {
		return bisect.Outcome{Verdict: bisect.Skipped, Reason: "no cell passed with " + p.o.Metric}
	}
	if role == bisect.GoodEnd {
		return bisect.Outcome{Verdict: bisect.Good, Reason: fmt.Sprintf("%s %g", p.o.Metric, v)}
	}
	good := p.waitGood(ctx)
	g, _, gok := meanMetric(good, p.o.Metric)
	if good == nil || !gok || g == 0 {
		return bisect.Outcome{Verdict: bisect.Skipped, Reason: errNoGood.Error()}
	}
	thr, _ := parsePercent(p.o.Threshold)
	change := (v - g) / g
	worse := change > thr
	if dir == "higher" {
		worse = change < -thr
	}
	reason := fmt.Sprintf("%s %g against %g on the good commit (%+.1f%%, threshold %s)", p.o.Metric, v, g, 100*change, p.o.Threshold)
	if worse {
		return bisect.Outcome{Verdict: bisect.Bad, Reason: reason}
	}
	return bisect.Outcome{Verdict: bisect.Good, Reason: reason}
}

// setGood makes the good end's run known to the probes waiting for it.
func (p *Prober) setGood(run *testrun.Run) {
	p.goodMu.Lock()
	defer p.goodMu.Unlock()
	select {
	case <-p.goodDone:
	default:
		p.goodRun = run
		close(p.goodDone)
	}
}

func (p *Prober) waitGood(ctx context.Context) *testrun.Run {
	select {
	case <-p.goodDone:
	case <-ctx.Done():
		return nil
	}
	p.goodMu.Lock()
	defer p.goodMu.Unlock()
	return p.goodRun
}

// LoadGood reads the good end's run when an earlier run of the bisect
// probed it.
func (p *Prober) LoadGood(st *bisect.State) error {
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
func (p *Prober) note(l *Lane, c bisect.Commit, o bisect.Outcome) {
	text := fmt.Sprintf("%s of %s %s..%s: %s is %s", p.id, p.o.Component, p.o.Good, p.o.Bad, c.Line(), o.Verdict.Word())
	if o.Reason != "" {
		text += " (" + o.Reason + ")"
	}
	h := history.OpenLazy(p.lane.Submit.Store, false)
	defer h.Close()
	if _, err := history.Annotate(h, o.Sweep, testrun.Note{Author: "kvsweep bisect", Time: time.Now().UTC(), Text: text}); err != nil {
		fmt.Fprintf(l.Stderr, "kvsweep bisect: the note on %s was not stored: %v\n", c.Short(), err)
	}
}

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
