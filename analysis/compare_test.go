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

// A metric only one side measured in a case both ran (the connector's hit
// rate of the arm with a connector) is listed beside the comparison with
// its side, never compared.
func TestCompareOneSided(t *testing.T) {
	base := firstRepeat(collected(t, "base"))
	cand := firstRepeat(collected(t, "cand"))
	cell := &cand.Cells[0]
	cs := &cell.Cases[0]
	cs.Metrics = append(cs.Metrics, result.Metric{Name: "kv_connector_hit_rate", Value: 0.75, Unit: "ratio"})
	cmp := Compare("b", []*testrun.Run{base}, "c", []*testrun.Run{cand}, CompareOptions{Threshold: 0.05})
	var got []OneSidedMetric
	for _, m := range cmp.OneSided {
		if m.Metric == "kv_connector_hit_rate" {
			got = append(got, m)
		}
	}
	if len(got) != 1 || got[0].Side != "candidate" || got[0].Median != 0.75 || got[0].Case != cs.ID || got[0].Unit != "ratio" {
		t.Errorf("one-sided metrics: %+v", cmp.OneSided)
	}
	for _, m := range cmp.Metrics {
		if m.Metric == "kv_connector_hit_rate" {
			t.Errorf("a one-sided metric compared: %+v", m)
		}
	}
	// The other way round: the baseline's.
	back := Compare("c", []*testrun.Run{cand}, "b", []*testrun.Run{base}, CompareOptions{Threshold: 0.05})
	if len(back.OneSided) == 0 || back.OneSided[len(back.OneSided)-1].Side != "baseline" {
		t.Errorf("the baseline's one-sided metric: %+v", back.OneSided)
	}
}
