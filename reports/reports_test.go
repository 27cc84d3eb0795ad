package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// Every format of the summary, the comparison and the history.
func TestGolden(t *testing.T) {
	mixed := collected(t, "mixed")
	base := collected(t, "base")
	cand := collected(t, "cand")
	for _, f := range []Format{"markdown", "table", "csv", "json"} {
		var b bytes.Buffer
		if err := WriteSummary(&b, f, mixed); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", "summary."+string(f)), b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, mixed); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "summary.junit.xml"), b.Bytes())

	cmp := analysis.Compare("base-1", []*testrun.Run{base}, "cand-1", []*testrun.Run{cand}, analysis.CompareOptions{Threshold: 0.05})
	for _, f := range []Format{"markdown", "csv", "json", "html", "junit"} {
		b.Reset()
		if err := WriteComparison(&b, f, cmp); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", "compare."+string(f)), b.Bytes())
	}
	// Two identical runs: no differences, said so, and no rows unless --all.
	same := analysis.Compare("base-1", []*testrun.Run{base}, "base-1", []*testrun.Run{base}, analysis.CompareOptions{Threshold: 0.05})
	b.Reset()
	if err := WriteComparison(&b, "markdown", same); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "compare-same.markdown"), b.Bytes())
	same = analysis.Compare("base-1", []*testrun.Run{base}, "base-1", []*testrun.Run{base}, analysis.CompareOptions{Threshold: 0.05, All: true})
	b.Reset()
	if err := WriteComparison(&b, "table", same); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "compare-same-all.table"), b.Bytes())
	runs := []*testrun.Run{base, cand, mixed}
	for _, f := range []Format{"markdown", "csv", "json"} {
		b.Reset()
		if err := WriteHistory(&b, f, analysis.History(runs, analysis.DefaultFigures), analysis.DefaultFigures); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", "history."+string(f)), b.Bytes())
	}
	b.Reset()
	if err := WriteHTML(&b, runs, "kvsweep history"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "history.html"), b.Bytes())
}

// The JUnit output validates against the Ant JUnit schema (xmllint, a real
// validator) and parses back with the counts a reporter shows.
func TestJUnitValidates(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("xmllint is not installed (scripts/test.sh installs libxml2-utils): %v", err)
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	var b bytes.Buffer
	runs := []*testrun.Run{collected(t, "mixed"), collected(t, "cand")}
	// A cell whose node failed under it: an infra failure.
	lost := runs[0].Cells[0]
	lost.CellID, lost.Name, lost.Cases, lost.Outcome, lost.State, lost.Class = "nodefail", "node-failed", nil, testrun.Missing, "NODE_FAIL", testrun.ClassInfra
	runs[0].Cells = append(runs[0].Cells, lost)
	if err := WriteJUnit(&b, runs...); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit-ant.xsd", path).CombinedOutput(); err != nil {
		t.Fatalf("xmllint: %v\n%s", err, out)
	}
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Errors   int `xml:"errors,attr"`
			Cases    []struct {
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Suites[0]
	// mixed: 6 cells x 4 cases, and the node-failed cell's 4. Test
	// failures are failures: one FAIL, and every case of the 3 cells
	// without a result whose harness ran (no result, time limit, garbage).
	// The node failure is an error on each of its cases. The cell whose
	// harness exited 3 after passing its cases keeps their verdicts; its
	// failure is in system-err.
	if s.Tests != 28 || s.Failures != 13 || s.Errors != 4 || len(s.Cases) != 28 {
		t.Errorf("mixed suite: tests %d failures %d errors %d cases %d", s.Tests, s.Failures, s.Errors, len(s.Cases))
	}
	if doc.Suites[1].Failures != 5 {
		t.Errorf("cand suite: %d failures, want 5 (TC-04 on aggregated x 5 repeats)", doc.Suites[1].Failures)
	}
}

// Markdown longer than a GitHub step summary is cut at a line with a note.
func TestMarkdownFitsStepSummary(t *testing.T) {
	run := &testrun.Run{ID: "big", Name: "big"}
	for i := 0; i < 20000; i++ {
		run.Cells = append(run.Cells, testrun.CellResult{CellID: fmt.Sprintf("%012x", i), Name: fmt.Sprintf("cell-%d-%s", i, strings.Repeat("x", 40)),
			Planned: []string{"TC-01"}, Outcome: testrun.OK, Cases: []result.Case{{ID: "TC-01", Verdict: result.Pass}}})
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, "markdown", run); err != nil {
		t.Fatal(err)
	}
	if b.Len() > StepSummaryLimit {
		t.Fatalf("%d bytes, over the limit", b.Len())
	}
	if !strings.Contains(b.String(), "**Truncated:**") || !strings.Contains(b.String(), "more rows were cut") {
		t.Error("no truncation note")
	}
}

// kvsweep ci's step summary of a 1,000-cell sweep (six cases, metrics,
// and a comparison with a baseline whose every metric moved) stays under
// GitHub's 1 MiB limit, with the comparison first.
func TestStepSummaryOf1000Cells(t *testing.T) {
	mk := func(id string, f float64) *testrun.Run {
		r := &testrun.Run{ID: id, Name: "phase1"}
		cases := []string{"TC-01", "TC-02", "TC-03", "TC-04", "TC-05", "TC-06"}
		for i := 0; i < 1000; i++ {
			c := testrun.CellResult{CellID: fmt.Sprintf("%012x", i), Name: fmt.Sprintf("vllm-aggregated-qwen3.5-4b-repeat-%d", i),
				Params:  map[string]string{"engine": "vllm", "topology": "aggregated", "geometry": "qwen3.5-4b", "n": fmt.Sprint(i)},
				Planned: cases, Outcome: testrun.OK}
			for _, cs := range cases {
				c.Cases = append(c.Cases, result.Case{ID: cs, Verdict: result.Pass, Metrics: result.Metrics{
					{Name: "throughput_tok_s", Value: 2000 / f, Unit: "tok/s", Direction: "higher"}, {Name: "ttft_ms", Value: 100 * f, Unit: "ms", Direction: "lower"}}})
			}
			r.Cells = append(r.Cells, c)
		}
		return r
	}
	base, cand := mk("base", 1), mk("cand", 1.5)
	cmp := analysis.Compare("base", []*testrun.Run{base}, "cand", []*testrun.Run{cand}, analysis.CompareOptions{Threshold: 0.05})
	var c, s, out bytes.Buffer
	if err := WriteComparison(&c, "markdown", cmp); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(&s, "markdown", cand); err != nil {
		t.Fatal(err)
	}
	if err := WriteStepSummary(&out, c.Bytes(), s.Bytes()); err != nil {
		t.Fatal(err)
	}
	if out.Len() > StepSummaryLimit {
		t.Fatalf("%d bytes, over GitHub's limit", out.Len())
	}
	if !strings.HasPrefix(out.String(), "## cand vs base\n\n### What changed") || !strings.Contains(out.String(), "**Truncated:**") {
		t.Errorf("the summary does not open with the comparison or says nothing of what it cut:\n%.300s", out.String())
	}
}

// The HTML report is one file: no scripts, stylesheets or images fetched.
func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, []*testrun.Run{collected(t, "base"), collected(t, "cand")}, ""); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, bad := range []string{"<script", "<link", "<img", "src=", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("the report fetches something: %q", bad)
		}
	}
	// One chart per metric and case: two metrics in each of TC-01, -02,
	// -04 and -06.
	if n := strings.Count(html, "<svg"); n != 8 {
		t.Errorf("%d charts, want one per metric and case (8)", n)
	}
	if n := strings.Count(html, `class="y-title"`); n != 8 || strings.Count(html, `class="x-title"`) != 8 {
		t.Errorf("charts without axis titles: %d y titles", n)
	}
	if !strings.Contains(html, "<title>vllm-aggregated-qwen3.5-4b base-1: ") {
		t.Error("chart points do not name their cell and run")
	}
	// The candidate's kvcr commit changed, and its ttft is 30% worse on the
	// shared topology: both are marked.
	if !strings.Contains(html, "kvcr 0c1d2e3→9e8d7c6") {
		t.Error("the commit change is not marked on the axis")
	}
	if !strings.Contains(html, `class="regression"`) || !strings.Contains(html, "regression from") {
		t.Error("no regression marked")
	}
}

// A comparison's JUnit validates too, with a failing testcase per
// regressed cell and case.
func TestComparisonJUnitValidates(t *testing.T) {
	base, cand := collected(t, "base"), collected(t, "cand")
	cmp := analysis.Compare("base-1", []*testrun.Run{base}, "cand-1", []*testrun.Run{cand}, analysis.CompareOptions{Threshold: 0.05})
	var b bytes.Buffer
	if err := WriteComparison(&b, "junit", cmp); err != nil {
		t.Fatal(err)
	}
	// TC-04 on aggregated got worse; four cases of the shared cell regressed.
	if s := validJUnit(t, b.Bytes())[0]; s.Failures != 5 || s.Tests != 8 {
		t.Errorf("failures %d of %d tests, want 5 of 8\n%s", s.Failures, s.Tests, b.String())
	}
}
