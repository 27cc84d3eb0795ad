package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/sbatch"
	"github.com/kvsweep/kvsweep/sweep"
)

// resultsFile is the collected run, kept in the sweep directory.
const resultsFile = "results.json"

func init() {
	register(&command{
		name:    "collect",
		args:    "DIR",
		summary: "Read every cell's result.json into the sweep's results and the history store",
		help: `Reads cells/ID/result.json of every cell of the sweep directory DIR in
parallel (validated against result.json schema v1, at most --max-result-size
each, never through a link out of DIR) and gives each cell one outcome: OK,
INVALID (with the error and its JSON path), MISSING (with the job's final
state) or HARNESS_FAILED. Writes DIR/results.json and stores the run in the
history store under the sweep id (collecting again replaces it). Exits 1 when
any cell is not OK; every other cell is collected all the same.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			so := schedFlags(fs)
			store := fs.String("store", reports.DefaultStorePath(), "history store (bbolt file); $KVSWEEP_STORE sets the default")
			noStore := fs.Bool("no-store", false, "do not write the history store")
			maxSize := fs.Int64("max-result-size", reports.DefaultMaxResultSize, "largest result.json accepted, in bytes")
			return func(e *env, args []string) error {
				dir, err := oneArg(args, "the sweep directory")
				if err != nil {
					return err
				}
				run, err := collect(e, dir, so, *maxSize)
				if err != nil {
					return err
				}
				if !*noStore {
					st, err := reports.OpenStore(*store, false)
					if err != nil {
						return err
					}
					defer st.Close()
					if err := st.Put(run); err != nil {
						return err
					}
				}
				for _, c := range run.Cells {
					if c.Outcome != reports.OK {
						fmt.Fprintf(e.stderr, "kvsweep collect: cell %s (%s): %s\n", c.Name, c.CellID, strings.TrimPrefix(outcomeLine(c), c.Outcome+": "))
					}
				}
				fmt.Fprintf(e.stdout, "collected sweep %s: %d cells: %s\n", run.ID, len(run.Cells), run.CountsLine())
				if !run.Complete() {
					return fmt.Errorf("collection incomplete: %s", run.CountsLine())
				}
				return nil
			}
		},
	})
	register(&command{
		name:    "report",
		args:    "[SEL] | --baseline SEL --candidate SEL | --history",
		summary: "Summaries, baseline vs candidate comparisons and the run history",
		help: `SEL is a sweep directory, a sweep id in the history store, or a selector
over stored runs: KEY=VALUE[,KEY=VALUE] on a cell parameter (engine=vllm),
image.digest, or image.source_revisions.COMPONENT (a commit prefix).

  kvsweep report DIR                              the cells x cases verdict grid and metrics
  kvsweep report --baseline A --candidate B       verdict changes first, then metric deltas
  kvsweep report --history [--filter K=V] [--since 2026-11-01]

Deltas use each metric's direction; a change for the worse past --threshold
(or its --metric-threshold) is a regression. With two or more samples on
both sides (repeats, or several runs) the delta is tested with a
Mann-Whitney U test and shown as ~ when not significant; with one sample
"n=1" says nothing could be tested. Markdown fits a GitHub step summary.
--check exits 3 when a case failed, a cell has no valid result, or a
regression passed its threshold.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			format := fs.String("format", "markdown", "markdown, table, csv, json, junit or html")
			baseline := fs.String("baseline", "", "baseline selection (SEL)")
			candidate := fs.String("candidate", "", "candidate selection (SEL)")
			history := fs.Bool("history", false, "one row per stored run, for the test plan")
			filters := fs.StringSlice("filter", nil, "with --history: only cells with KEY=VALUE (repeatable)")
			since := fs.String("since", "", "with --history: runs from this date (2006-01-02)")
			until := fs.String("until", "", "with --history: runs up to this date")
			threshold := fs.String("threshold", "5%", "relative change past which a change for the worse is a regression")
			perMetric := fs.StringSlice("metric-threshold", nil, "NAME=PCT, a metric's own threshold (repeatable)")
			check := fs.Bool("check", false, "exit 3 on failed cases, missing cells or regressions")
			store := fs.String("store", reports.DefaultStorePath(), "history store")
			return func(e *env, args []string) error {
				if err := oneOf("format", *format, "markdown", "table", "csv", "json", "junit", "html"); err != nil {
					return err
				}
				switch {
				case *history:
					return reportHistory(e, *store, *format, *filters, *since, *until, *check)
				case *baseline != "" || *candidate != "":
					if *baseline == "" || *candidate == "" {
						return usagef("--baseline and --candidate go together")
					}
					opts := reports.CompareOptions{PerMetric: map[string]float64{}}
					var err error
					if opts.Threshold, err = parsePct(*threshold); err != nil {
						return usagef("--threshold: %v", err)
					}
					for _, mt := range *perMetric {
						name, pct, ok := strings.Cut(mt, "=")
						v, err := parsePct(pct)
						if !ok || err != nil {
							return usagef("--metric-threshold %q: expected NAME=PCT, like ttft_ms=10%%", mt)
						}
						opts.PerMetric[name] = v
					}
					base, err := selectRuns(*store, *baseline)
					if err != nil {
						return err
					}
					cand, err := selectRuns(*store, *candidate)
					if err != nil {
						return err
					}
					cmp := reports.Compare(*baseline, base, *candidate, cand, opts)
					if err := reports.WriteComparison(e.stdout, *format, cmp); err != nil {
						return err
					}
					if *check {
						return checkRuns(cand, cmp.Regressions())
					}
					return nil
				}
				if len(args) != 1 {
					return usagef("give a sweep directory or run (SEL), --baseline and --candidate, or --history")
				}
				runs, err := selectRuns(*store, args[0])
				if err != nil {
					return err
				}
				switch *format {
				case "junit":
					err = reports.WriteJUnit(e.stdout, runs...)
				case "html":
					err = reports.WriteHTML(e.stdout, runs)
				default:
					for _, r := range runs {
						if err = reports.WriteSummary(e.stdout, *format, r); err != nil {
							break
						}
					}
				}
				if err != nil {
					return err
				}
				if *check {
					return checkRuns(runs, 0)
				}
				return nil
			}
		},
	})
}

func outcomeLine(c reports.CellResult) string {
	if c.Outcome == reports.Missing {
		return "MISSING: " + c.Detail
	}
	return c.Outcome + ": " + c.Detail
}

// collect runs reports.Collect with the scheduler's final states; where
// the scheduler cannot be asked (another machine), from the sweep's own
// records.
func collect(e *env, dir string, so *schedOpts, maxSize int64) (*reports.Run, error) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	opts := reports.CollectOptions{MaxResultSize: maxSize, States: map[string]reports.CellState{}, Manifest: m}
	if spec, err := matrix.Load(filepath.Join(dir, sweep.SpecFile)); err == nil {
		opts.ImageRef = spec.Container.Image
	}
	sched, err := so.pick(e, dir, m)
	if err != nil {
		return nil, err
	}
	cells, _, err := sbatch.Status(context.Background(), dir, sched)
	if err != nil {
		fmt.Fprintf(e.stderr, "kvsweep collect: the scheduler could not be asked (%v); cells without a result show the state recorded in the sweep directory\n", err)
		cells, _, err = sbatch.Status(context.Background(), dir, &offline{})
	}
	if err == nil {
		for _, c := range cells {
			opts.States[c.ID] = reports.CellState{State: c.State, ExitCode: c.ExitCode}
		}
	}
	run, err := reports.Collect(dir, opts)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(run)
	if err != nil {
		return nil, err
	}
	return run, sweep.WriteFileAtomic(filepath.Join(dir, resultsFile), append(b, '\n'), 0o644)
}

// offline is a scheduler that knows nothing: status then relies on the
// journal, observed states and exit markers.
type offline struct{ sbatch.Slurm }

func (*offline) Poll(context.Context, []string) (*sbatch.Poll, error) {
	return &sbatch.Poll{Tasks: map[string]sbatch.TaskState{}, Accounting: true}, nil
}

// selectRuns resolves SEL: a sweep directory, a stored sweep id, or a
// KEY=VALUE selector over the stored runs.
func selectRuns(storePath, sel string) ([]*reports.Run, error) {
	if fi, err := os.Stat(filepath.Join(sel, sweep.ManifestFile)); err == nil && !fi.IsDir() {
		b, err := os.ReadFile(filepath.Join(sel, resultsFile))
		if err != nil {
			return nil, fmt.Errorf("%s has no %s: run kvsweep collect %s first", sel, resultsFile, sel)
		}
		var r reports.Run
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(sel, resultsFile), err)
		}
		return []*reports.Run{&r}, nil
	}
	st, err := reports.OpenStore(storePath, true)
	if err != nil {
		return nil, fmt.Errorf("%q is not a sweep directory, and %v", sel, err)
	}
	defer st.Close()
	if strings.Contains(sel, "=") {
		fs, err := reports.ParseFilters(strings.Split(sel, ","))
		if err != nil {
			return nil, usagef("%v", err)
		}
		all, err := st.Runs()
		if err != nil {
			return nil, err
		}
		runs := reports.Select(all, fs)
		if len(runs) == 0 {
			return nil, fmt.Errorf("no stored run has cells matching %s", sel)
		}
		return runs, nil
	}
	r, err := st.Get(sel)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%q is neither a sweep directory nor a run in %s (kvsweep report --history lists them)", sel, storePath)
	}
	return []*reports.Run{r}, nil
}

func reportHistory(e *env, storePath, format string, filters []string, since, until string, check bool) error {
	fs, err := reports.ParseFilters(filters)
	if err != nil {
		return usagef("--filter: %v", err)
	}
	var from, to time.Time
	if since != "" {
		if from, err = time.Parse("2006-01-02", since); err != nil {
			return usagef("--since %q: expected a date like 2026-11-01", since)
		}
	}
	if until != "" {
		if to, err = time.Parse("2006-01-02", until); err != nil {
			return usagef("--until %q: expected a date like 2026-11-30", until)
		}
		to = to.Add(24*time.Hour - time.Nanosecond)
	}
	st, err := reports.OpenStore(storePath, true)
	if err != nil {
		return err
	}
	defer st.Close()
	all, err := st.Runs()
	if err != nil {
		return err
	}
	runs := reports.Select(all, fs)
	switch format {
	case "html":
		return reports.WriteHTML(e.stdout, runs)
	case "junit":
		return reports.WriteJUnit(e.stdout, runs...)
	}
	if err := reports.WriteHistory(e.stdout, format, reports.History(runs, from, to, reports.DefaultFigures), reports.DefaultFigures); err != nil {
		return err
	}
	if check {
		return checkRuns(runs, 0)
	}
	return nil
}

// checkRuns is --check: a checkError when any case failed, any cell has
// no valid result, or there are regressions.
func checkRuns(runs []*reports.Run, regressions int) error {
	failed, incomplete := 0, 0
	for _, r := range runs {
		for _, c := range r.Cells {
			if c.Outcome != reports.OK {
				incomplete++
			}
			for _, cs := range c.Cases {
				if cs.Verdict == reports.Fail || cs.Verdict == reports.Error {
					failed++
				}
			}
		}
	}
	if failed+incomplete+regressions == 0 {
		return nil
	}
	return &checkError{fmt.Sprintf("check failed: %d failed case(s), %d cell(s) without a valid result, %d regression(s)", failed, incomplete, regressions)}
}

// parsePct reads "5%" or "0.05" as 0.05.
func parsePct(s string) (float64, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		return v / 100, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && v > 1 {
		return 0, fmt.Errorf("%q: write a percentage as %s%%", s, s)
	}
	return v, err
}
