package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// A failing case of a valid result says what happened, never the cell's
// "OK": its message, its verdict, or, for a planned case a result of an
// earlier kvsweep did not report, that it was not reported.
func TestJUnitMessagesNeverOK(t *testing.T) {
	r := &testrun.Run{ID: "s-1", Name: "s", Cells: []testrun.CellResult{{CellID: "0123456789ab", Name: "c", Outcome: testrun.OK, Class: testrun.ClassTest,
		Planned: []string{"TC-01", "TC-02", "TC-03", "TC-04"},
		Cases: []result.Case{{ID: "TC-01", Verdict: result.Pass}, {ID: "TC-02", Verdict: result.Fail},
			{ID: "TC-03", Verdict: testrun.NotReported, Message: "planned, but result.json has no such case (it reported TC-01, TC-02)"}}}}}
	var b bytes.Buffer
	if err := WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`tests="4" failures="3"`,
		`<failure message="the harness said FAIL" type="FAIL">`,
		`<failure message="planned, but result.json has no such case (it reported TC-01, TC-02)" type="NOT_REPORTED">`,
		`<failure message="planned, but the result has no such case" type="NOT_REPORTED">`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("JUnit lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `message="OK`) {
		t.Errorf("a failure says OK:\n%s", out)
	}
}
