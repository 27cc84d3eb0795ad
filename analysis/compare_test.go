package analysis

import (
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// The candidate fails TC-04 on aggregated in every repeat and is 30%
// slower on disagg: both show, the verdict change first, and the timing
// regressions are significant with 5 samples a side.
func TestCompareFindsRegressions(t *testing.T) {
	base := collected(t, "base")
	cand := collected(t, "cand")
	cmp := Compare("base", []*testrun.Run{base}, "cand", []*testrun.Run{cand}, CompareOptions{Threshold: 0.05})
	if len(cmp.Verdicts) != 1 || cmp.Verdicts[0].Case != "TC-04" || cmp.Verdicts[0].Baseline != result.Pass || cmp.Verdicts[0].Candidate != result.Fail || !cmp.Verdicts[0].Worse {
		t.Errorf("verdict changes: %+v", cmp.Verdicts)
	}
	regressions := 0
	for _, m := range cmp.Metrics {
		slow := strings.HasPrefix(m.Cell, "vllm-disagg") && m.Direction == "lower" && (m.Unit == "s" || m.Unit == "ms")
		if slow != m.Regression {
			t.Errorf("%s %s %s: delta %+.1f%% %s, regression=%v", m.Cell, m.Case, m.Metric, m.DeltaPct, m.Significance, m.Regression)
		}
		if m.Regression {
			regressions++
			if !strings.HasPrefix(m.Significance, "p=") || !strings.Contains(m.Significance, "n=5") {
				t.Errorf("%s: significance %q", m.Metric, m.Significance)
			}
		}
	}
	if regressions == 0 {
		t.Fatal("no metric regression found")
	}
	// Regressions sort first.
	if !cmp.Metrics[0].Regression {
		t.Error("regressions are not on top")
	}
	// One sample a side: nothing to test, so "n=1", and the threshold alone decides.
	one := Compare("b", []*testrun.Run{firstRepeat(base)}, "c", []*testrun.Run{firstRepeat(cand)}, CompareOptions{Threshold: 0.05})
	for _, m := range one.Metrics {
		if m.Significance != "n=1" {
			t.Fatalf("%s: significance %q with one sample", m.Metric, m.Significance)
		}
	}
}

func firstRepeat(r *testrun.Run) *testrun.Run {
	cp := *r
	cp.Cells = nil
	for _, c := range r.Cells {
		if c.Params["repeat"] == "1" {
			cp.Cells = append(cp.Cells, c)
		}
	}
	return &cp
}
