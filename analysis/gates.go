package analysis

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// Gates are what report --check requires beyond its defaults.
type Gates struct {
	// RequireProvenance fails a cell that ran without the image's
	// source-revisions.json.
	RequireProvenance bool
}

// Check is report --check and kvsweep ci's verdict: a *fail.CheckError
// that says every reason when a case failed or is INVALID, a planned
// case is NOT_REPORTED or a reported one UNPLANNED, a cell has no valid
// result, there are regressions, or, with a comparison (cmp may be
// nil), it matched no cell or the candidate lacks a cell or case of the
// baseline; nil otherwise. Nothing to check is a failure too.
func Check(runs []*testrun.Run, comparison *Comparison, g Gates) error {
	var why []string
	reason := func(n int, format string, examples []string) {
		if n == 0 {
			return
		}
		msg := fmt.Sprintf(format, n)
		if len(examples) > 0 {
			if len(examples) > 3 {
				examples = append(examples[:3], "...")
			}
			msg += " (" + strings.Join(examples, "; ") + ")"
		}
		why = append(why, msg)
	}
	cells := 0
	var failed, invalid, unreported, unplanned, infra, broken, unproven []string
	for _, r := range runs {
		for _, c := range r.Cells {
			cells++
			switch {
			case c.Outcome != testrun.OK && c.Class == testrun.ClassInfra:
				infra = append(infra, c.Name+": "+testrun.OutcomeText(c))
			case c.Outcome != testrun.OK:
				broken = append(broken, c.Name+": "+testrun.OutcomeText(c))
			}
			for _, cs := range c.Cases {
				switch cs.Verdict {
				case result.Fail, result.Error:
					failed = append(failed, c.Name+" "+cs.ID)
				case testrun.Invalid:
					invalid = append(invalid, c.Name+" "+cs.ID+": "+cs.Message)
				}
			}
			for _, p := range c.CaseProblems() {
				if p.Verdict == testrun.Unplanned {
					unplanned = append(unplanned, p.Cell+" "+p.Case)
				} else {
					unreported = append(unreported, p.Cell+" "+p.Case)
				}
			}
			if g.RequireProvenance && c.Image.SourceRevisions == nil {
				unproven = append(unproven, c.Name+": "+cmp.Or(c.NoProvenance, "no source-revisions.json"))
			}
		}
	}
	if cells == 0 {
		why = append(why, "no cell to check")
	}
	reason(len(failed), "%d failed case(s)", failed)
	reason(len(invalid), "%d INVALID case(s)", invalid)
	reason(len(unreported), "%d planned case(s) NOT_REPORTED by the result", unreported)
	reason(len(unplanned), "%d UNPLANNED case(s) reported that the cell did not plan", unplanned)
	reason(len(broken), "%d cell(s) without a valid result (test)", broken)
	reason(len(infra), "%d cell(s) without a result for a reason outside the test (infra)", infra)
	reason(len(unproven), "%d cell(s) ran without provenance (--require-provenance)", unproven)
	if comparison != nil {
		reason(comparison.Regressions(), "%d regression(s)", comparison.Regressed())
		if comparison.Matched == 0 {
			why = append(why, fmt.Sprintf("the comparison matched no cell: baseline %s and candidate %s share no cell", comparison.Baseline, comparison.Candidate))
		}
		reason(len(comparison.OnlyInBaseline), "%d baseline cell(s) missing from the candidate", comparison.OnlyInBaseline)
		reason(len(comparison.MissingCases), "%d baseline case(s) missing from the candidate", comparison.MissingCases)
	}
	if len(why) == 0 {
		return nil
	}
	return &fail.CheckError{Msg: "check failed: " + strings.Join(why, "; ")}
}

// ParseThresholds makes CompareOptions from --threshold ("5%" or 0.05)
// and --metric-threshold terms (NAME=PCT).
func ParseThresholds(threshold string, perMetric []string) (CompareOptions, error) {
	opts := CompareOptions{PerMetric: map[string]float64{}}
	var err error
	if opts.Threshold, err = parsePct(threshold); err != nil {
		return opts, fail.Usagef("--threshold: %v", err)
	}
	for _, mt := range perMetric {
		name, pct, ok := strings.Cut(mt, "=")
		v, err := parsePct(pct)
		if !ok || err != nil {
			return opts, fail.Usagef("--metric-threshold %q: expected NAME=PCT, like ttft_ms=10%%", mt)
		}
		opts.PerMetric[name] = v
	}
	return opts, nil
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
