package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/progress"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(collectCmd, reportCmd) }

var collectCmd = &command{
	name:    "collect",
	args:    "DIR",
	summary: "Read every cell's result.json into the sweep's results and the history store",
	help: `Reads cells/ID/result.json of every cell of the sweep directory DIR in
parallel (validated against result.json schema v1, at most --max-result-size
each, never through a link out of DIR) and gives each cell one outcome: OK,
INVALID (with the error and its JSON path), MISSING (with the job's final
state) or HARNESS_FAILED. A case the cell planned (its --cases) that the
result does not report is NOT_REPORTED, and one the result reports that the
cell did not plan (TC-1 for TC-01) is UNPLANNED; both fail the cell, and
collect names each. Writes DIR/results.json and stores the run in the history
store under the sweep id (collecting again replaces it). Exits 1 when any cell
is not OK or any case is NOT_REPORTED or UNPLANNED; every other cell is
collected all the same.

A sweep with cells still queued or running (NOT_FINISHED: no exit marker,
and the scheduler says RUNNING, PENDING, SUBMITTED, SUSPENDED or REQUEUED)
is not collected: nothing is written or stored, no report is printed, and
collect exits 1 naming those cells and saying what to do: wait with
kvsweep status DIR --watch, then collect again (or cancel what will never
run). Such cells are never infra failures and never enter the bad-node
ledger.

--no-store writes DIR/results.json only, leaving the history store alone:
a trial run looked at, not made a baseline (kvsweep store push DIR stores
it later).

--report FORMAT then prints what kvsweep report DIR --format FORMAT would,
from the cells just read rather than from results.json read back (the
counts line goes to stderr, so stdout is the report alone).`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		cfg := querySchedFlags(fs)
		store := fs.String("store", history.DefaultStorePath(), "history store: a bbolt file, or postgres://USER@HOST/DB; $KVSWEEP_STORE sets the default")
		noStore := fs.Bool("no-store", false, "do not write the history store")
		maxSize := fs.Int64("max-result-size", testrun.DefaultMaxResultSize, "largest result.json accepted, in bytes")
		quiet := quietFlag(fs)
		report := fs.String("report", "", "then print the sweep's report in this format (as kvsweep report DIR --format): markdown, table, csv, json, junit or html")
		return func(e *env, args []string) error {
			dir, err := oneArg(args, "the sweep directory")
			if err != nil {
				return err
			}
			var format reports.Format
			if *report != "" {
				if format, err = reports.ParseFormat(*report); err != nil {
					return usagef("--report %v", err)
				}
			}
			if *noStore {
				*store = ""
			}
			opts := testrun.CollectOptions{MaxResultSize: *maxSize}
			if !*quiet && progress.IsTerminal(e.stderr) {
				opts.Progress = progress.Count(e.stderr, "reading results")
			}
			run, err := schedLane(e, cfg, *store).Collect(dir, opts, format)
			if err != nil {
				return err
			}
			if !run.Complete() {
				return fmt.Errorf("collection incomplete: %s%s", run.CountsLine(), casesHint(run))
			}
			return nil
		}
	},
}

// casesHint says what a harness whose result and plan disagree must do.
func casesHint(run *testrun.Run) string {
	if len(run.CaseProblems()) == 0 {
		return ""
	}
	return " (a cell's result must report each case the cell planned, the ids its --cases gives, and no other)"
}

var reportCmd = &command{
	name:    "report",
	args:    "[SEL] | --baseline SEL --candidate SEL | --history",
	summary: "Summaries, baseline vs candidate comparisons and the run history",
	help: `SEL is a sweep directory, a sweep id in the history store, or a selector
over stored runs: KEY=VALUE[,KEY=VALUE] on a cell parameter (engine=vllm),
image.digest, or image.source_revisions.COMPONENT (a commit prefix).

  kvsweep report DIR                              the cells x cases verdict grid and metrics
  kvsweep report --baseline A --candidate B       verdict changes first, then metric deltas
  kvsweep report SEL --baseline-filter engine=vllm-bare
                                                  within one run: the probe cells against the others
  kvsweep report --history [--spec NAME] [--filter K=V] [--since 2026-11-01]
                                                  one row per stored run; the runs
                                                  removed (kvsweep store forget) listed
                                                  under the table, with who, when and why

Deltas use each metric's direction; a change for the worse past --threshold
(or its --metric-threshold) is a regression. With two or more samples on
both sides (repeats, or several runs) the delta is tested with a
Mann-Whitney U test and shown as ~ when not significant; with one sample
"n=1" says nothing could be tested. Markdown fits a GitHub step summary.
--check exits 3, saying why, when a case failed or is INVALID (a PASS that
broke a validity rule), NOT_REPORTED (planned, but not in the result) or
UNPLANNED (in the result, but not planned), a cell has no valid result, a
regression passed its threshold, the comparison matched no cell, or the
candidate lacks a cell or case the baseline has; with --require-provenance also when a cell ran
without the image's source-revisions.json. Every comparison opens with what
changed between the sides: image digest, component commits, kvsweep
version, cluster, nodes and spec keys.

On search directories (kvsweep search), the operating points and probes,
or two searches' operating points compared per cell (docs/search.md).

--baseline-filter K=V takes the baseline side from the cells of SEL that
match (the bare-engine probes of a sweep); the candidate side is every
other cell of SEL, or those matching --candidate-filter. Cells are matched
across the sides on every parameter except the filtered ones.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := reportFlags(fs)
		return func(e *env, args []string) error {
			var err error
			if o.report, err = reports.ParseFormat(o.format); err != nil {
				return usagef("--format %v", err)
			}
			o.h = history.OpenLazy(o.store, true)
			defer o.h.Close()
			switch {
			case o.history:
				return o.historyReport(e)
			case reports.IsSearch(args, o.baseline, o.candidate):
				return reports.SearchReport(e.stdout, o.report, args, o.baseline, o.candidate, o.check)
			case o.baseline != "" || o.candidate != "":
				return o.compare(e, "")
			case len(o.baseFilter) > 0:
				if len(args) != 1 {
					return usagef("--baseline-filter splits one selection: give SEL")
				}
				return o.compare(e, args[0])
			case len(o.candFilter) > 0:
				return usagef("--candidate-filter goes with --baseline-filter")
			case len(args) != 1:
				return usagef("give a sweep directory or run (SEL), --baseline and --candidate, or --history")
			}
			runs, err := history.SelectRuns(o.h, args[0])
			if err == nil {
				err = reports.WriteRuns(e.stdout, o.report, runs, history.IsSelector(args[0]), args[0])
			}
			return o.checked(runs, nil, err)
		}
	},
}

type reportOpts struct {
	format, baseline, candidate, threshold, store string
	report                                        reports.Format // --format, parsed
	history, check, all                           bool
	baseFilter, candFilter                        []string
	perMetric                                     []string
	query                                         reports.HistoryQuery
	gates                                         analysis.Gates
	h                                             *history.Lazy // the store, opened once, when first read
}

func reportFlags(fs *pflag.FlagSet) *reportOpts {
	o := &reportOpts{}
	fs.StringVar(&o.format, "format", "markdown", "markdown, table, csv, json, junit or html")
	fs.StringVar(&o.baseline, "baseline", "", "baseline selection (SEL)")
	fs.StringVar(&o.candidate, "candidate", "", "candidate selection (SEL)")
	fs.StringSliceVar(&o.baseFilter, "baseline-filter", nil, "compare within SEL: the baseline is its cells with KEY=VALUE (repeatable)")
	fs.StringSliceVar(&o.candFilter, "candidate-filter", nil, "with --baseline-filter: the candidate is the cells with KEY=VALUE (default: every other cell)")
	fs.BoolVar(&o.history, "history", false, "one row per stored run, for the test plan")
	fs.StringVar(&o.query.Spec, "spec", "", "with --history: only the runs of the spec of this name (its name: key), of any ref")
	fs.StringSliceVar(&o.query.Filters, "filter", nil, "with --history: only cells with KEY=VALUE (repeatable)")
	fs.StringVar(&o.query.Since, "since", "", "with --history: runs from this date (2006-01-02)")
	fs.StringVar(&o.query.Until, "until", "", "with --history: runs up to this date")
	fs.StringSliceVar(&o.query.Figures, "figures", analysis.DefaultFigures, "with --history: the metrics shown per run, a column each: the median over its cells and cases (NAME,NAME)")
	fs.BoolVar(&o.all, "all", false, "comparisons: list unchanged metrics too (JSON always has them)")
	fs.StringVar(&o.threshold, "threshold", "5%", "relative change past which a change for the worse is a regression")
	fs.StringSliceVar(&o.perMetric, "metric-threshold", nil, "NAME=PCT, a metric's own threshold (repeatable)")
	fs.BoolVar(&o.check, "check", false, "exit 3 on failed or INVALID cases, cells without a result, regressions, or a comparison that matched no cell or lost a baseline cell or case")
	fs.BoolVar(&o.gates.RequireProvenance, "require-provenance", false, "with --check: fail a cell that ran without the image's source-revisions.json")
	fs.StringVar(&o.store, "store", history.DefaultStorePath(), "history store")
	return o
}

// historyReport is report --history: the store answers the query, and
// the report formats the runs it returned.
func (o *reportOpts) historyReport(e *env) error {
	q, err := history.HistoryQuery(o.query.Filters, o.query.Since, o.query.Until)
	if err != nil {
		return err
	}
	q.Spec = o.query.Spec
	runs, err := o.h.Query(q)
	if err == nil && len(runs) == 0 {
		o.query.Store = o.h.String()
		o.query.Stored, err = o.h.Count()
	}
	if err == nil {
		err = reports.WriteHistoryReport(e.stdout, o.report, runs, o.query)
	}
	if err == nil && (o.report == "markdown" || o.report == "table") {
		err = o.writeRemovals(e, q)
	}
	return o.checked(runs, nil, err)
}

// writeRemovals lists, under the history's table, the runs q would have
// selected that were removed from the store, with who removed each, when
// and why: a run is never missing from the history without a trace.
func (o *reportOpts) writeRemovals(e *env, q history.Query) error {
	all, err := o.h.Removals()
	if err != nil {
		return err
	}
	var lines []string
	for _, r := range all {
		if r.Matches(q) {
			lines = append(lines, "- "+r.String())
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(e.stdout, "\nRemoved from the store (kvsweep store forget):\n\n%s\n", strings.Join(lines, "\n"))
	}
	return nil
}

// compare is report --baseline A --candidate B, or, with sel, report SEL
// --baseline-filter K=V [--candidate-filter K=V]: one selection split into
// the two sides. Filters on two selections narrow each side. Either way
// the filtered parameters are not part of the cell match.
func (o *reportOpts) compare(e *env, sel string) error {
	if sel == "" && (o.baseline == "" || o.candidate == "") {
		return usagef("--baseline and --candidate go together")
	}
	opts, err := analysis.ParseThresholds(o.threshold, o.perMetric)
	if err != nil {
		return err
	}
	sides, err := analysis.SelectSides(o.h, analysis.SideQuery{Selection: sel, Baseline: o.baseline, Candidate: o.candidate,
		BaseFilter: o.baseFilter, CandFilter: o.candFilter})
	if err != nil {
		return err
	}
	opts.All = o.all
	opts.Ignore = append([]string{"repeat"}, sides.Ignore...)
	cmp := analysis.Compare(sides.BaseLabel, sides.Base, sides.CandLabel, sides.Cand, opts)
	return o.checked(sides.Cand, cmp, reports.WriteComparison(e.stdout, o.report, cmp))
}

// checked applies --check to runs (and the comparison, if any) once the
// report is written.
func (o *reportOpts) checked(runs []*testrun.Run, cmp *analysis.Comparison, err error) error {
	if err != nil || !o.check {
		return err
	}
	return analysis.Check(runs, cmp, o.gates)
}
