package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// run makes a run of passing cells, one per topology, each with cases.
func gateRun(id string, topologies []string, cases ...string) *testrun.Run {
	r := &testrun.Run{ID: id, Name: "gates"}
	for _, tp := range topologies {
		c := testrun.CellResult{CellID: tp, Name: "vllm-" + tp, Params: map[string]string{"engine": "vllm", "topology": tp, "geometry": "g"},
			Planned: cases, Outcome: testrun.OK, Image: result.Image{SourceRevisions: &provenance.SourceRevisions{}}}
		for _, cs := range cases {
			c.Cases = append(c.Cases, result.Case{ID: cs, Verdict: result.Pass, Metrics: result.Metrics{{Name: "ttft_ms", Value: 100, Direction: "lower"}}})
		}
		r.Cells = append(r.Cells, c)
	}
	return r
}

func wantCheck(t *testing.T, err error, want string) {
	t.Helper()
	var ce *fail.CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("check passed (%v), want a failure saying %q", err, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("check: %v\nwant it to say %q", err, want)
	}
}

// Each hole a green check used to let through.
func TestGates(t *testing.T) {
	base := gateRun("base", []string{"aggregated", "disagg"}, "TC-01", "TC-02")
	same := func() *testrun.Run { return gateRun("cand", []string{"aggregated", "disagg"}, "TC-01", "TC-02") }
	check := func(cand *testrun.Run, g Gates) error {
		cmp := Compare("base", []*testrun.Run{base}, "cand", []*testrun.Run{cand}, CompareOptions{Threshold: 0.05})
		return Check([]*testrun.Run{cand}, cmp, g)
	}
	if err := check(same(), Gates{RequireProvenance: true}); err != nil {
		t.Fatalf("identical sides: %v", err)
	}
	t.Run("comparison matched no cell", func(t *testing.T) {
		other := gateRun("cand", []string{"two-node"}, "TC-01", "TC-02")
		other.Cells[0].Params["engine"] = "sglang"
		wantCheck(t, check(other, Gates{}), "the comparison matched no cell")
	})
	t.Run("candidate dropped a topology", func(t *testing.T) {
		wantCheck(t, check(gateRun("cand", []string{"aggregated"}, "TC-01", "TC-02"), Gates{}),
			"1 baseline cell(s) missing from the candidate (vllm-disagg-g)")
	})
	t.Run("candidate dropped a case", func(t *testing.T) {
		wantCheck(t, check(gateRun("cand", []string{"aggregated", "disagg"}, "TC-01"), Gates{}),
			"2 baseline case(s) missing from the candidate (vllm-aggregated-g TC-02; vllm-disagg-g TC-02)")
	})
	t.Run("no provenance", func(t *testing.T) {
		c := same()
		c.Cells[1].Image.SourceRevisions, c.Cells[1].NoProvenance = nil, "the image has no /opt/kvcr-build/source-revisions.json"
		if err := check(c, Gates{}); err != nil {
			t.Fatalf("without --require-provenance: %v", err)
		}
		wantCheck(t, check(c, Gates{RequireProvenance: true}), "1 cell(s) ran without provenance (--require-provenance) (vllm-disagg: the image has no")
	})
	t.Run("INVALID case", func(t *testing.T) {
		c := same()
		c.Cells[0].Cases[1].Verdict, c.Cells[0].Cases[1].Message = testrun.Invalid, "rule tokens_generated > 0 broken: tokens_generated is 0"
		wantCheck(t, check(c, Gates{}), "1 INVALID case(s) (vllm-aggregated TC-02: rule tokens_generated > 0 broken")
	})
	t.Run("nothing to check", func(t *testing.T) {
		wantCheck(t, Check([]*testrun.Run{{ID: "empty"}}, nil, Gates{}), "no cell to check")
	})
	t.Run("infra told from test", func(t *testing.T) {
		c := same()
		c.Cells[0].Outcome, c.Cells[0].State, c.Cells[0].Class, c.Cells[0].Cases = testrun.Missing, "NODE_FAIL", testrun.ClassInfra, nil
		c.Cells[1].Outcome, c.Cells[1].Detail, c.Cells[1].Class, c.Cells[1].Cases = testrun.HarnessFailed, "the harness exited 2", testrun.ClassTest, nil
		err := check(c, Gates{})
		wantCheck(t, err, "1 cell(s) without a result for a reason outside the test (infra) (vllm-aggregated: MISSING (NODE_FAIL) [infra])")
		wantCheck(t, err, "1 cell(s) without a valid result (test) (vllm-disagg: HARNESS_FAILED: the harness exited 2 [test])")
	})
}

// A verdicts-only topology's metrics are shown but never compared.
func TestVerdictsOnly(t *testing.T) {
	base := gateRun("base", []string{"aggregated", "disagg"}, "TC-01")
	cand := gateRun("cand", []string{"aggregated", "disagg"}, "TC-01")
	for _, r := range []*testrun.Run{base, cand} {
		r.Cells[1].VerdictsOnly = true
	}
	cand.Cells[1].Cases[0].Metrics.Set(result.Metric{Name: "ttft_ms", Value: 900, Direction: "lower"})
	cmp := Compare("base", []*testrun.Run{base}, "cand", []*testrun.Run{cand}, CompareOptions{Threshold: 0.05})
	if len(cmp.Metrics) != 1 || cmp.Metrics[0].Cell != "vllm-aggregated-g" {
		t.Errorf("compared metrics: %+v, want only the aggregated cell's", cmp.Metrics)
	}
	if len(cmp.VerdictsOnly) != 1 || cmp.VerdictsOnly[0] != "vllm-disagg-g" {
		t.Errorf("verdicts-only cells: %v", cmp.VerdictsOnly)
	}
	if err := Check([]*testrun.Run{cand}, cmp, Gates{}); err != nil {
		t.Errorf("a 9x slower verdicts-only cell failed the check: %v", err)
	}
	// Its verdicts still count.
	cand.Cells[1].Cases[0].Verdict = result.Fail
	cmp = Compare("base", []*testrun.Run{base}, "cand", []*testrun.Run{cand}, CompareOptions{Threshold: 0.05})
	wantCheck(t, Check([]*testrun.Run{cand}, cmp, Gates{}), "1 failed case(s) (vllm-disagg TC-01)")
}

func setValidity(t *testing.T, dir string, v *sweep.Validity) {
	t.Helper()
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Validity = v
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, sweep.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A PASS that breaks a rule is INVALID, naming the rule and the value;
// a rule on a metric the case did not report makes it INVALID too.
func TestValidityRules(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	setValidity(t, dir, &sweep.Validity{
		Cases:      map[string][]string{"TC-01": {"ttft_ms < 100"}, "TC-02": {"dram_hit_rate >= 0.5"}, "TC-06": {"guard_hits >= 5"}},
		Topologies: map[string][]string{"aggregated": {"ttft_ms > 0"}},
	})
	run := collectDir(t, dir)
	var pass testrun.CellResult
	for _, c := range run.Cells {
		if c.Name == "vllm-aggregated-qwen3.5-4b-sim-pass" {
			pass = c
		}
	}
	got := map[string]result.Case{}
	for _, cs := range pass.Cases {
		got[cs.ID] = cs
	}
	for id, want := range map[string]string{
		"TC-01": "INVALID: the harness said PASS, but rule ttft_ms < 100 broken: ttft_ms is 188.3729",
		"TC-02": "PASS: ",
		"TC-04": "INVALID: the harness said PASS, but rule ttft_ms > 0: the case reported no ttft_ms",
		"TC-06": "INVALID: the harness said PASS, but rule guard_hits >= 5: the case reported no guard_hits",
	} {
		if s := got[id].Verdict + ": " + got[id].Message; !strings.HasPrefix(s, want) {
			t.Errorf("%s: %q, want %q", id, s, want)
		}
	}
	if pass.Class != testrun.ClassTest {
		t.Errorf("class %q, want test", pass.Class)
	}
	wantCheck(t, Check([]*testrun.Run{run}, nil, Gates{}), "INVALID case(s)")
}

// Classes from what the job left: a node failure and a job that never
// started its harness are infra; a harness that ran and failed is test.
func TestFailureClasses(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	byName := map[string]string{}
	m, _ := sweep.ReadManifest(dir)
	for _, c := range m.Cells {
		byName[strings.TrimPrefix(c.Name, "vllm-aggregated-qwen3.5-4b-sim-")] = c.ID
	}
	cell := func(name string) string { return filepath.Join(dir, sweep.CellsDir, byName[name]) }
	// no-result: the job exited 1 before its harness started (an image pull).
	os.Remove(filepath.Join(cell("no-result"), sweep.StartedFile))
	mk, _ := os.ReadFile(filepath.Join(cell("no-result"), sweep.ExitFile))
	os.WriteFile(filepath.Join(cell("no-result"), sweep.ExitFile), []byte(strings.Replace(string(mk), `"exit_code": 0`, `"exit_code": 1`, 1)), 0o644)
	run, err := testrun.Collect(dir, testrun.CollectOptions{Now: sweeptest.Now, States: map[string]sweep.CellState{
		byName["sleep-30"]: {TaskState: sweep.TaskState{State: "TIMEOUT"}, Attempts: 1},
		byName["pass"]: {TaskState: sweep.TaskState{State: "COMPLETED", Nodes: "n2"}, Attempts: 2,
			Earlier: []sweep.TaskState{{State: "NODE_FAIL", Nodes: "n1"}}},
		byName["exit-3"]: {TaskState: sweep.TaskState{State: "NODE_FAIL", Nodes: "n1"}, Attempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]testrun.CellResult{}
	for _, c := range run.Cells {
		got[strings.TrimPrefix(c.Name, "vllm-aggregated-qwen3.5-4b-sim-")] = c
	}
	for name, want := range map[string]string{
		"pass":            "OK  (after 1 infra retry: NODE_FAIL on n1)",
		"fail-case-tc-04": "OK test",
		"no-result":       "NOT_STARTED infra",
		"garbage":         "INVALID test",
		"sleep-30":        "MISSING test",
	} {
		c := got[name]
		if s := c.Outcome + " " + c.Class + testrun.RetriesText(c); s != want {
			t.Errorf("%s: %q (%s), want %q", name, s, c.Detail, want)
		}
	}
	// The harness of exit-3 started and wrote its result: its node failing
	// afterwards does not make its exit status the node's fault.
	if c := got["exit-3"]; c.Outcome != testrun.HarnessFailed || c.Class != testrun.ClassTest {
		t.Errorf("exit-3: %s %s", c.Outcome, c.Class)
	}
}

// The ledger counts every infra failure, retried or final, per node, and
// nothing else.
func TestBadNodes(t *testing.T) {
	now := sweeptest.Now
	old := &testrun.Run{ID: "old", CollectedAt: now.Add(-30 * 24 * time.Hour), Cells: []testrun.CellResult{
		{Outcome: testrun.Missing, State: "NODE_FAIL", Class: testrun.ClassInfra, Nodes: "n9"}}}
	a := &testrun.Run{ID: "a", CollectedAt: now.Add(-time.Hour), Cells: []testrun.CellResult{
		{Outcome: testrun.OK, Nodes: "n2", Attempts: 2, Earlier: []testrun.Attempt{{State: "NODE_FAIL", Nodes: "n1", Class: testrun.ClassInfra}}},
		{Outcome: testrun.Missing, State: "PREEMPTED", Class: testrun.ClassInfra, Nodes: "n1"},
		{Outcome: testrun.HarnessFailed, Class: testrun.ClassTest, Nodes: "n3"},
		{Outcome: testrun.OK, Nodes: "n3", Attempts: 2, Earlier: []testrun.Attempt{{State: "FAILED", Nodes: "n3", Class: testrun.ClassTest}}},
	}}
	b := &testrun.Run{ID: "b", CollectedAt: now, Cells: []testrun.CellResult{
		{Outcome: testrun.NotStarted, Class: testrun.ClassInfra, Nodes: "n2"}}}
	ledger := BadNodes([]*testrun.Run{old, a, b}, now.Add(-7*24*time.Hour))
	var got []string
	for _, n := range ledger {
		got = append(got, fmt.Sprintf("%s %d %v %v", n.Node, n.Failures, n.States, n.Sweeps))
	}
	want := []string{"n1 2 map[NODE_FAIL:1 PREEMPTED:1] [a]", "n2 1 map[UNKNOWN:1] [b]"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("ledger:\n got %q\nwant %q", got, want)
	}
	if ex := Exclusions(ledger, 2); len(ex) != 1 || ex[0] != "n1" {
		t.Errorf("exclusions at 2: %v", ex)
	}
	if len(BadNodes([]*testrun.Run{old}, time.Time{})) != 1 {
		t.Error("a zero window does not count every run")
	}
}

// A planned case the result did not report, and a reported case the cell
// did not plan, fail the gates naming them; against a baseline that ran
// the case, the case lost is a verdict that got worse.
func TestGatesCasesNotPlannedOrNotReported(t *testing.T) {
	base := gateRun("base", []string{"aggregated"}, "TC-01", "TC-02")
	cand := gateRun("cand", []string{"aggregated"}, "TC-01", "TC-02")
	c := &cand.Cells[0]
	c.Class = testrun.ClassTest
	c.Cases[1] = result.Case{ID: "TC-02", Verdict: testrun.NotReported, Message: "planned, but result.json has no such case (it reported TC-01, TC-2)"}
	c.Cases = append(c.Cases, result.Case{ID: "TC-2", Verdict: testrun.Unplanned})
	err := Check([]*testrun.Run{cand}, nil, Gates{})
	wantCheck(t, err, "1 planned case(s) NOT_REPORTED by the result (vllm-aggregated TC-02)")
	wantCheck(t, err, "1 UNPLANNED case(s) reported that the cell did not plan (vllm-aggregated TC-2)")

	cmp := Compare("base", []*testrun.Run{base}, "cand", []*testrun.Run{cand}, CompareOptions{Threshold: 0.05})
	if len(cmp.Verdicts) != 1 || cmp.Verdicts[0].Candidate != testrun.NotReported || !cmp.Verdicts[0].Worse {
		t.Errorf("verdict changes %+v, want TC-02 PASS -> NOT_REPORTED, worse", cmp.Verdicts)
	}
	wantCheck(t, Check([]*testrun.Run{cand}, cmp, Gates{}), "1 regression(s)")

	// A run an earlier kvsweep collected lacks the NOT_REPORTED case: the
	// planned case without a verdict fails all the same.
	old := gateRun("old", []string{"aggregated"}, "TC-01", "TC-02")
	old.Cells[0].Cases = old.Cells[0].Cases[:1]
	wantCheck(t, Check([]*testrun.Run{old}, nil, Gates{}), "1 planned case(s) NOT_REPORTED by the result (vllm-aggregated TC-02)")
}
