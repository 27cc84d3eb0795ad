package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(ciCmd) }

var ciCmd = &command{
	name:    "ci",
	args:    "SPEC --out DIR",
	summary: "One command for a CI job: run the sweep, report, and exit by the gates",
	help: `Renders SPEC into DIR (or resumes the sweep already there), submits what
was never submitted, follows it with one log line per change (retrying
infra failures under the spec's retry.infra), collects it into the history
store with --ref, and reports: markdown into --summary (GitHub's
$GITHUB_STEP_SUMMARY by default, kept under its 1 MiB limit) and JUnit
into --junit. The tails of the logs of every cell that did not pass go to
the CI log, one ::group:: per cell. The exit status is report --check's:
0 when every gate holds, 3 when one does not (it says which).

--baseline auto compares against the newest stored run of the same spec
name on --baseline-ref (default main); none yet is not an error on a
first run. On SIGTERM or SIGINT (a cancelled workflow) every job of the
sweep is cancelled before kvsweep ci exits, and it says so.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := &ciOpts{render: renderFlags(fs), submit: submitFlags(fs), report: &reportOpts{check: true}}
		fs.DurationVar(&o.interval, "interval", 30*time.Second, "time between polls")
		fs.StringVar(&o.report.baseline, "baseline", "auto", "baseline selection (SEL), auto, or none")
		fs.StringVar(&o.baselineRef, "baseline-ref", "main", "with --baseline auto: the ref whose newest run is the baseline")
		fs.StringVar(&o.ref, "ref", os.Getenv("GITHUB_REF_NAME"), "the ref this run tests, stored with it (default $GITHUB_REF_NAME)")
		fs.StringVar(&o.summary, "summary", os.Getenv("GITHUB_STEP_SUMMARY"), "markdown report, appended (default $GITHUB_STEP_SUMMARY, else DIR/summary.md)")
		fs.StringVar(&o.junit, "junit", "", "JUnit XML report (default DIR/junit.xml)")
		fs.IntVar(&o.logLines, "log-lines", 40, "lines of each log of a failing cell shown in the CI log")
		fs.IntVar(&o.logCells, "log-cells", 20, "failing cells whose logs are shown")
		fs.StringVar(&o.report.threshold, "threshold", "5%", "relative change past which a change for the worse is a regression")
		fs.StringSliceVar(&o.report.perMetric, "metric-threshold", nil, "NAME=PCT, a metric's own threshold (repeatable)")
		fs.BoolVar(&o.report.gates.RequireProvenance, "require-provenance", false, "fail a cell that ran without the image's source-revisions.json")
		fs.StringVar(&o.artifacts, "artifacts", "", "copy the evidence and logs of the cells that did not pass into this directory, for the workflow to upload")
		fs.Int64Var(&o.artifactsMB, "artifacts-max-mb", 100, "with --artifacts: at most this many MiB in all (what is left out is listed in ARTIFACTS.txt)")
		return func(e *env, args []string) error {
			spec, err := oneArg(args, "the spec file")
			if err != nil {
				return err
			}
			return o.run(e, spec)
		}
	},
}

type ciOpts struct {
	render             *renderOpts
	submit             *submitOpts
	report             *reportOpts
	interval           time.Duration
	baselineRef, ref   string
	summary, junit     string
	logLines, logCells int
	artifacts          string
	artifactsMB        int64
}

func (o *ciOpts) run(e *env, spec string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.render.render(e, spec); err != nil {
		return err
	}
	dir := o.render.out
	err := o.submit.submit(e, dir, nil)
	var cells []scheduler.CellStatus
	if err == nil && ctx.Err() == nil {
		cells, err = o.follow(ctx, e, dir)
	}
	if ctx.Err() != nil {
		return o.cancelled(e, dir)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "kvsweep ci: every cell ended: %s\n", scheduler.CountsLine(cells))
	return o.judge(e, dir)
}

// judge collects the ended sweep, compares it and holds it to the gates.
// A history store that cannot be reached fails the lane, but after its
// verdict: the run is judged and written all the same.
func (o *ciOpts) judge(e *env, dir string) error {
	run, err := collect(e, dir, o.submit.sched, testrun.CollectOptions{Ref: o.ref}, o.submit.store, "")
	var notStored *history.NotStoredError
	if err != nil && !errors.As(err, &notStored) {
		return err
	}
	o.showLogs(e, dir, run)
	o.gather(e, run)
	cmp, err := o.compare(e, run)
	if err != nil {
		return err
	}
	if err := o.write(dir, run, cmp); err != nil {
		return err
	}
	var errs []error
	if err := analysis.Check([]*testrun.Run{run}, cmp, o.report.gates); err != nil {
		errs = append(errs, err)
	} else {
		fmt.Fprintf(e.stderr, "kvsweep ci: every gate holds\n")
	}
	if notStored != nil {
		errs = append(errs, notStored)
	}
	return errors.Join(errs...)
}

// gather copies the evidence and logs of the cells that did not pass
// into --artifacts, for the workflow to upload; a failure to is said, and
// judges nothing.
func (o *ciOpts) gather(e *env, run *testrun.Run) {
	if o.artifacts == "" {
		return
	}
	g, err := run.GatherArtifacts(o.artifacts, o.artifactsMB<<20)
	if err != nil {
		fmt.Fprintf(e.stderr, "kvsweep ci: gathering the artifacts into %s: %v\n", o.artifacts, err)
		return
	}
	fmt.Fprintf(e.stderr, "kvsweep ci: %d file(s) (%s) of the %d cell(s) that did not pass gathered into %s", g.Files, sweep.Size(g.Bytes), g.Cells, o.artifacts)
	if len(g.LeftOut) > 0 {
		fmt.Fprintf(e.stderr, "; %d left out (%s lists them)", len(g.LeftOut), filepath.Join(o.artifacts, "ARTIFACTS.txt"))
	}
	fmt.Fprintln(e.stderr)
}

// follow polls the sweep until every cell is terminal: a line per change.
func (o *ciOpts) follow(ctx context.Context, e *env, dir string) ([]scheduler.CellStatus, error) {
	_, sched, err := openSweep(e, dir, o.submit.sched)
	if err != nil {
		return nil, err
	}
	return scheduler.Watch(ctx, dir, sched, scheduler.FollowOptions{Interval: o.interval, Show: progress(e, o.submit.quiet),
		Retried: retried(e), Paced: paced(e), Submit: o.submit.opts})
}

// cancelled cancels every live job of the sweep after a signal.
func (o *ciOpts) cancelled(e *env, dir string) error {
	_, sched, err := openSweep(e, dir, o.submit.sched)
	if err != nil {
		return err
	}
	ctx, done := context.WithTimeout(context.Background(), time.Minute)
	defer done()
	n, err := scheduler.Cancel(ctx, dir, sched, nil)
	if err != nil {
		return fmt.Errorf("interrupted, and cancelling the sweep's jobs failed: %w (run kvsweep cancel %s)", err, dir)
	}
	return fmt.Errorf("interrupted: cancelled %d task(s) of the sweep in %s", n, dir)
}

// compare picks the baseline and compares the run with it; nil without one.
func (o *ciOpts) compare(e *env, run *testrun.Run) (*analysis.Comparison, error) {
	var base []*testrun.Run
	label := o.report.baseline
	h := history.OpenLazy(o.submit.store, true)
	defer h.Close()
	switch o.report.baseline {
	case "none", "":
		return nil, nil
	case "auto":
		b, err := history.Latest(h, run.Name, o.baselineRef, run.ID)
		if err != nil {
			return nil, err
		}
		if b == nil {
			fmt.Fprintf(e.stderr, "kvsweep ci: no stored run of %s on %s to compare with (a first run); reporting this run alone\n", run.Name, o.baselineRef)
			return nil, nil
		}
		base, label = []*testrun.Run{b}, b.ID+" ("+o.baselineRef+")"
	default:
		var err error
		if base, err = history.SelectRuns(h, o.report.baseline); err != nil {
			return nil, err
		}
	}
	opts, err := analysis.ParseThresholds(o.report.threshold, o.report.perMetric)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "kvsweep ci: comparing with %s\n", label)
	return analysis.Compare(label, base, run.ID, []*testrun.Run{run}, opts), nil
}

// write writes the step summary (comparison first) and the JUnit file.
func (o *ciOpts) write(dir string, run *testrun.Run, cmp *analysis.Comparison) error {
	var parts [][]byte
	if cmp != nil {
		var b bytes.Buffer
		if err := reports.WriteComparison(&b, "markdown", cmp); err != nil {
			return err
		}
		parts = append(parts, b.Bytes())
	}
	var b bytes.Buffer
	if err := reports.WriteSummary(&b, "markdown", run); err != nil {
		return err
	}
	parts = append(parts, b.Bytes())
	summary := o.summary
	if summary == "" {
		summary = filepath.Join(dir, "summary.md")
	}
	f, err := os.OpenFile(summary, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if err := reports.WriteStepSummary(f, parts...); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	junit := o.junit
	if junit == "" {
		junit = filepath.Join(dir, "junit.xml")
	}
	var x bytes.Buffer
	if err := reports.WriteJUnit(&x, run); err != nil {
		return err
	}
	return os.WriteFile(junit, x.Bytes(), 0o644)
}

// showLogs prints the log tails of the cells that did not pass, one
// ::group:: each (GitHub folds them).
func (o *ciOpts) showLogs(e *env, dir string, run *testrun.Run) {
	shown := 0
	for _, c := range run.Cells {
		if c.Outcome == testrun.OK && c.Class == "" {
			continue
		}
		if shown == o.logCells {
			fmt.Fprintf(e.stdout, "kvsweep ci: logs of further failing cells left out (--log-cells %d); kvsweep logs %s CELL shows them\n", o.logCells, dir)
			return
		}
		shown++
		fmt.Fprintf(e.stdout, "::group::cell %s (%s): %s\n", c.Name, c.CellID, testrun.OutcomeText(c))
		writeLogTails(e.stdout, dir, c.CellID, o.logLines)
		fmt.Fprintln(e.stdout, "::endgroup::")
	}
}
