package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// A run of a PR stack reports a revisions x cases table with the first
// revision that did not pass marked.
func TestRevisionGrid(t *testing.T) {
	run := &testrun.Run{ID: "stack-1"}
	for _, rv := range []struct {
		rev, tc06 string
	}{{"pr-1", result.Pass}, {"pr-2", "FAIL"}, {"pr-3", "FAIL"}} {
		for _, engine := range []string{"vllm", "sglang"} {
			run.Cells = append(run.Cells, testrun.CellResult{Name: engine + "-" + rv.rev, Outcome: testrun.OK,
				Params:  map[string]string{"engine": engine, "revision": rv.rev},
				Planned: []string{"TC-01", "TC-06"},
				Cases:   []result.Case{{ID: "TC-01", Verdict: result.Pass}, {ID: "TC-06", Verdict: rv.tc06}}})
		}
	}
	run.Cells[3].Cases[1].Verdict = result.Pass // pr-2 fails TC-06 on one engine of two
	var b bytes.Buffer
	if err := WriteSummary(&b, "markdown", run); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### By revision",
		"| pr-1                     | PASS  | PASS     |",
		"| **pr-2 (first failing)** | PASS  | FAIL 1/2 |",
		"| pr-3                     | PASS  | FAIL     |",
		"First failing revision: pr-2 (of 3, in the order given).",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	// A run without revision sets has no such table.
	b.Reset()
	run.Cells = run.Cells[:1]
	delete(run.Cells[0].Params, "revision")
	if err := WriteSummary(&b, "markdown", run); err != nil || strings.Contains(b.String(), "By revision") {
		t.Errorf("%v\n%s", err, b.String())
	}
}
