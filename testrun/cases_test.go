package testrun

import (
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/result"
)

// A planned case the result lacks is added as NOT_REPORTED, naming what
// was reported; a reported case the cell did not plan becomes UNPLANNED,
// keeping what the harness said; both fail the cell and its collection.
func TestReconcileCases(t *testing.T) {
	cr := CellResult{Name: "c", CellID: "0123456789ab", Planned: []string{"TC-01", "TC-02", "TC-03"}, Outcome: OK,
		Cases: []result.Case{{ID: "TC-01", Verdict: result.Pass}, {ID: "TC-2", Verdict: result.Fail, Message: "slow"}}}
	reconcileCases(&cr)
	want := map[string][2]string{
		"TC-01": {result.Pass, ""},
		"TC-2":  {Unplanned, "result.json reported it (FAIL), but the cell planned no such case (it planned TC-01, TC-02, TC-03); its message: slow"},
		"TC-02": {NotReported, "planned, but result.json has no such case (it reported TC-01, TC-2)"},
		"TC-03": {NotReported, "planned, but result.json has no such case (it reported TC-01, TC-2)"},
	}
	if len(cr.Cases) != len(want) {
		t.Fatalf("cases %+v, want %d", cr.Cases, len(want))
	}
	for _, cs := range cr.Cases {
		if w := want[cs.ID]; cs.Verdict != w[0] || cs.Message != w[1] {
			t.Errorf("%s: %s %q, want %s %q", cs.ID, cs.Verdict, cs.Message, w[0], w[1])
		}
	}
	if got := classify(cr, true); got != ClassTest {
		t.Errorf("class %q, want %q", got, ClassTest)
	}
	run := &Run{Cells: []CellResult{cr}}
	if run.Complete() {
		t.Error("a run with NOT_REPORTED and UNPLANNED cases is complete")
	}
	if got, want := run.CountsLine(), "1 OK; cases: 2 NOT_REPORTED, 1 UNPLANNED"; got != want {
		t.Errorf("counts %q, want %q", got, want)
	}
	if got := len(run.CaseProblems()); got != 3 {
		t.Errorf("%d problems, want 3: %v", got, run.CaseProblems())
	}

	// A result that reports nothing says so; a cell that plans nothing is
	// held to nothing.
	empty := CellResult{Planned: []string{"TC-01"}, Outcome: OK}
	reconcileCases(&empty)
	if len(empty.Cases) != 1 || !strings.HasSuffix(empty.Cases[0].Message, "(it reported no case)") {
		t.Errorf("empty result: %+v", empty.Cases)
	}
	free := CellResult{Outcome: OK, Cases: []result.Case{{ID: "x", Verdict: result.Pass}}}
	reconcileCases(&free)
	if free.Cases[0].Verdict != result.Pass || len(free.CaseProblems()) != 0 {
		t.Errorf("a cell that plans no case: %+v", free.Cases)
	}
}

// A run an earlier kvsweep collected has no NOT_REPORTED cases of its
// own: its planned cases without a verdict count all the same, and a
// cell without a valid result is counted by its outcome instead.
func TestCaseProblemsOfEarlierRuns(t *testing.T) {
	old := CellResult{Name: "c", Planned: []string{"TC-01", "TC-02"}, Outcome: OK, Cases: []result.Case{{ID: "TC-01", Verdict: result.Pass}}}
	ps := old.CaseProblems()
	if len(ps) != 1 || ps[0].Case != "TC-02" || ps[0].Verdict != NotReported {
		t.Errorf("problems %+v, want TC-02 NOT_REPORTED", ps)
	}
	missing := CellResult{Name: "c", Planned: []string{"TC-01"}, Outcome: Missing}
	if ps := missing.CaseProblems(); len(ps) != 0 {
		t.Errorf("a MISSING cell's problems: %+v", ps)
	}
}

// Long lists of ids are cut, saying how many more.
func TestIDList(t *testing.T) {
	var ids []string
	for _, c := range "abcdefghij" {
		ids = append(ids, string(c))
	}
	if got, want := idList(ids), "a, b, c, d, e, f, g, h and 2 more"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
