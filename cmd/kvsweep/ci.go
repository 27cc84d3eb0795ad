package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
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
$GITHUB_STEP_SUMMARY by default, kept under its 1 MiB limit), opening
with the verdict ("Gates: passed", or "Gates: FAILED: " and why), and
JUnit into --junit: the run's cases, and the comparison's, where a
regression, a verdict that got worse or a lost baseline cell or case is
a failure. The tails of the logs of every cell that did not pass go to
the CI log, one ::group:: per cell. The exit status is report --check's:
0 when every gate holds, 3 when one does not (it says which), and the
JUnit is never green when it is 3.

--baseline auto compares against the newest stored run of the same spec
name on --baseline-ref (default main); none yet is not an error on a
first run, and the summary's first line says the run is reported alone. On SIGTERM or SIGINT (a cancelled workflow) every job of the
sweep is cancelled before kvsweep ci exits, and it says so.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := &ciOpts{render: renderFlags(fs), submit: submitFlags(fs)}
		j := &o.judging
		fs.DurationVar(&o.interval, "interval", 30*time.Second, "time between polls")
		fs.StringVar(&j.Baseline, "baseline", "auto", "baseline selection (SEL), auto, or none")
		fs.StringVar(&j.BaselineRef, "baseline-ref", "main", "with --baseline auto: the ref whose newest run is the baseline")
		fs.StringVar(&o.ref, "ref", os.Getenv("GITHUB_REF_NAME"), "the ref this run tests, stored with it (default $GITHUB_REF_NAME)")
		fs.StringVar(&o.ci.Summary, "summary", os.Getenv("GITHUB_STEP_SUMMARY"), "markdown report, appended (default $GITHUB_STEP_SUMMARY, else DIR/"+lane.SummaryFile+")")
		fs.StringVar(&o.ci.JUnit, "junit", "", "JUnit XML report (default DIR/"+lane.JUnitFile+")")
		fs.IntVar(&o.ci.LogLines, "log-lines", 40, "lines of each log of a failing cell shown in the CI log")
		fs.IntVar(&o.ci.LogCells, "log-cells", 20, "failing cells whose logs are shown")
		fs.StringVar(&j.Threshold, "threshold", "5%", "relative change past which a change for the worse is a regression")
		fs.StringSliceVar(&j.PerMetric, "metric-threshold", nil, "NAME=PCT, a metric's own threshold (repeatable)")
		fs.BoolVar(&j.Gates.RequireProvenance, "require-provenance", false, "fail a cell that ran without the image's source-revisions.json")
		fs.StringVar(&o.ci.Artifacts, "artifacts", "", "copy the evidence and logs of the cells that did not pass, and the profiles of those that passed, into this directory, for the workflow to upload")
		fs.Int64Var(&o.ci.ArtifactsMB, "artifacts-max-mb", 100, "with --artifacts: at most this many MiB in all (what is left out is listed in ARTIFACTS.txt)")
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
	render   *lane.RenderOptions
	submit   *lane.SubmitOptions
	judging  lane.Judging
	ci       lane.CI
	interval time.Duration
	ref      string
}

// run is the lane end to end: prepare, run, judge, write. A history store
// that cannot be reached fails the lane, but after its verdict: the run
// is judged and written all the same.
func (o *ciOpts) run(e *env, spec string) error {
	ctx, stop := interruptible()
	defer stop()
	l := newLane(e)
	l.Render, l.Submit, l.Interval = *o.render, *o.submit, o.interval
	l.Ended = func(cells []scheduler.CellStatus) {
		fmt.Fprintf(e.stderr, "kvsweep ci: every cell ended: %s\n", scheduler.CountsLine(cells))
	}
	p, err := l.Prepare(ctx, spec)
	if err != nil {
		return err
	}
	out, err := l.Run(ctx, p, o.ref)
	if err != nil {
		return err
	}
	v, err := l.WriteCI(p.Dir, out.Run, &o.judging, &o.ci)
	if err != nil {
		return err
	}
	if v.Gates == nil {
		fmt.Fprintf(e.stderr, "kvsweep ci: every gate holds\n")
	}
	if out.NotStored != nil {
		return errors.Join(v.Gates, out.NotStored)
	}
	return v.Gates
}
