package analysis

import (
	"testing"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// A failed check names the regressions it counts, as it names failed
// cases: worse verdicts first, then the metrics past their threshold.
func TestCheckNamesRegressions(t *testing.T) {
	base := gateRun("base", []string{"aggregated", "disagg"}, "TC-01", "TC-02")
	cand := gateRun("cand", []string{"aggregated", "disagg"}, "TC-01", "TC-02")
	cand.Cells[0].Cases[0].Metrics[0].Value = 150
	cand.Cells[1].Cases[1].Verdict = result.Fail
	cmp := Compare("base", []*testrun.Run{base}, "cand", []*testrun.Run{cand}, CompareOptions{Threshold: 0.05})
	want := []string{"vllm-disagg-g TC-02 PASS -> FAIL", "vllm-aggregated-g TC-01 ttft_ms +50.00%"}
	got := cmp.Regressed()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Regressed() = %q, want %q", got, want)
	}
	wantCheck(t, Check([]*testrun.Run{cand}, cmp, Gates{}),
		"2 regression(s) (vllm-disagg-g TC-02 PASS -> FAIL; vllm-aggregated-g TC-01 ttft_ms +50.00%)")
}
