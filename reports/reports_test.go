package reports

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/golden"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

var fixedNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// collectTestdata collects a committed sweep with the states its journal
// records, as kvsweep collect does.
func collectTestdata(t *testing.T, dir string) *Run {
	t.Helper()
	states, err := scheduler.States(context.Background(), dir, &scheduler.Local{Dir: dir}, func(err error) { t.Fatal(err) })
	if err != nil {
		t.Fatal(err)
	}
	run, err := Collect(dir, CollectOptions{States: states, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestMixedOutcomes(t *testing.T) {
	run := collectTestdata(t, "testdata/mixed")
	want := map[string]string{
		"vllm-aggregated-qwen3.5-4b-sim-pass":            OK,
		"vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04": OK,
		"vllm-aggregated-qwen3.5-4b-sim-exit-3":          HarnessFailed,
		"vllm-aggregated-qwen3.5-4b-sim-no-result":       Missing,
		"vllm-aggregated-qwen3.5-4b-sim-garbage":         Invalid,
		"vllm-aggregated-qwen3.5-4b-sim-sleep-30":        Missing,
	}
	for _, c := range run.Cells {
		if c.Outcome != want[c.Name] {
			t.Errorf("%s: %s (%s), want %s", c.Name, c.Outcome, c.Detail, want[c.Name])
		}
		if c.Name == "vllm-aggregated-qwen3.5-4b-sim-sleep-30" && c.State != scheduler.StateTimeout {
			t.Errorf("timed-out cell: state %q, want TIMEOUT", c.State)
		}
	}
	if run.Complete() {
		t.Error("a run with missing cells is complete")
	}
}

// Every format of the summary, the comparison and the history.
func TestGolden(t *testing.T) {
	mixed := collectTestdata(t, "testdata/mixed")
	base := collectTestdata(t, "testdata/base")
	cand := collectTestdata(t, "testdata/cand")
	for _, f := range []string{"markdown", "table", "csv", "json"} {
		var b bytes.Buffer
		if err := WriteSummary(&b, f, mixed); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", "summary."+f), b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, mixed); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "summary.junit.xml"), b.Bytes())

	cmp := Compare("base-1", []*Run{base}, "cand-1", []*Run{cand}, CompareOptions{Threshold: 0.05})
	for _, f := range []string{"markdown", "csv", "json", "html", "junit"} {
		b.Reset()
		if err := WriteComparison(&b, f, cmp); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", "compare."+f), b.Bytes())
	}
	// Two identical runs: no differences, said so, and no rows unless --all.
	same := Compare("base-1", []*Run{base}, "base-1", []*Run{base}, CompareOptions{Threshold: 0.05})
	b.Reset()
	if err := WriteComparison(&b, "markdown", same); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "compare-same.markdown"), b.Bytes())
	same = Compare("base-1", []*Run{base}, "base-1", []*Run{base}, CompareOptions{Threshold: 0.05, All: true})
	b.Reset()
	if err := WriteComparison(&b, "table", same); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "compare-same-all.table"), b.Bytes())
	runs := []*Run{base, cand, mixed}
	for _, f := range []string{"markdown", "csv", "json"} {
		b.Reset()
		if err := WriteHistory(&b, f, History(runs, DefaultFigures), DefaultFigures); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", "history."+f), b.Bytes())
	}
	b.Reset()
	if err := WriteHTML(&b, runs, "kvsweep history"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "history.html"), b.Bytes())
}

// The candidate fails TC-04 on aggregated in every repeat and is 30%
// slower on disagg: both show, the verdict change first, and the timing
// regressions are significant with 5 samples a side.
func TestCompareFindsRegressions(t *testing.T) {
	base := collectTestdata(t, "testdata/base")
	cand := collectTestdata(t, "testdata/cand")
	cmp := Compare("base", []*Run{base}, "cand", []*Run{cand}, CompareOptions{Threshold: 0.05})
	if len(cmp.Verdicts) != 1 || cmp.Verdicts[0].Case != "TC-04" || cmp.Verdicts[0].Baseline != Pass || cmp.Verdicts[0].Candidate != Fail || !cmp.Verdicts[0].Worse {
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
	one := Compare("b", []*Run{firstRepeat(base)}, "c", []*Run{firstRepeat(cand)}, CompareOptions{Threshold: 0.05})
	for _, m := range one.Metrics {
		if m.Significance != "n=1" {
			t.Fatalf("%s: significance %q with one sample", m.Metric, m.Significance)
		}
	}
}

func firstRepeat(r *Run) *Run {
	cp := *r
	cp.Cells = nil
	for _, c := range r.Cells {
		if c.Params["repeat"] == "1" {
			cp.Cells = append(cp.Cells, c)
		}
	}
	return &cp
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
	runs := []*Run{collectTestdata(t, "testdata/mixed"), collectTestdata(t, "testdata/cand")}
	// A cell whose node failed under it: an infra failure.
	lost := runs[0].Cells[0]
	lost.CellID, lost.Name, lost.Cases, lost.Outcome, lost.State, lost.Class = "nodefail", "node-failed", nil, Missing, "NODE_FAIL", ClassInfra
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
	run := &Run{ID: "big", Name: "big"}
	for i := 0; i < 20000; i++ {
		run.Cells = append(run.Cells, CellResult{CellID: fmt.Sprintf("%012x", i), Name: fmt.Sprintf("cell-%d-%s", i, strings.Repeat("x", 40)),
			Planned: []string{"TC-01"}, Outcome: OK, Cases: []Case{{ID: "TC-01", Verdict: Pass}}})
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
	mk := func(id string, f float64) *Run {
		r := &Run{ID: id, Name: "phase1"}
		cases := []string{"TC-01", "TC-02", "TC-03", "TC-04", "TC-05", "TC-06"}
		for i := 0; i < 1000; i++ {
			c := CellResult{CellID: fmt.Sprintf("%012x", i), Name: fmt.Sprintf("vllm-aggregated-qwen3.5-4b-repeat-%d", i),
				Params:  map[string]string{"engine": "vllm", "topology": "aggregated", "geometry": "qwen3.5-4b", "n": fmt.Sprint(i)},
				Planned: cases, Outcome: OK}
			for _, cs := range cases {
				c.Cases = append(c.Cases, Case{ID: cs, Verdict: Pass, Metrics: Metrics{
					{Name: "throughput_tok_s", Value: 2000 / f, Unit: "tok/s", Direction: "higher"}, {Name: "ttft_ms", Value: 100 * f, Unit: "ms", Direction: "lower"}}})
			}
			r.Cells = append(r.Cells, c)
		}
		return r
	}
	base, cand := mk("base", 1), mk("cand", 1.5)
	cmp := Compare("base", []*Run{base}, "cand", []*Run{cand}, CompareOptions{Threshold: 0.05})
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

// Each corrupt result gets its outcome and message; the others are
// collected all the same.
func TestCorruptInputs(t *testing.T) {
	dir := copySweep(t, "testdata/mixed")
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, c := range m.Cells {
		byName[c.Name] = filepath.Join(dir, "cells", c.ID, "result.json")
	}
	okCell := byName["vllm-aggregated-qwen3.5-4b-sim-pass"]
	good, err := os.ReadFile(okCell)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.json")
	if err := os.WriteFile(outside, good, 0o644); err != nil {
		t.Fatal(err)
	}
	other := strings.TrimSuffix(filepath.Base(filepath.Dir(okCell)), "")
	corrupt := map[string]func(path string){
		"vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04": func(p string) { must(t, os.WriteFile(p, good[:len(good)/2], 0o644)) },
		"vllm-aggregated-qwen3.5-4b-sim-exit-3":          func(p string) { must(t, os.WriteFile(p, []byte{0x00, 0xff, 0x13, 0x37, 0x89}, 0o644)) },
		"vllm-aggregated-qwen3.5-4b-sim-no-result": func(p string) {
			f, err := os.Create(p)
			must(t, err)
			must(t, f.Truncate(100<<20)) // a 100 MiB file
			f.Close()
		},
		"vllm-aggregated-qwen3.5-4b-sim-garbage": func(p string) {
			must(t, os.WriteFile(p, bytes.Replace(good, []byte(`"schema_version": 1`), []byte(`"schema_version": 7`), 1), 0o644))
		},
		"vllm-aggregated-qwen3.5-4b-sim-sleep-30": func(p string) {
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.Symlink(outside, p))
		},
	}
	for name, f := range corrupt {
		_ = os.Remove(byName[name])
		f(byName[name])
	}
	// A result without cases, and one that names another cell.
	extra := copySweep(t, "testdata/mixed")
	_ = extra
	run, err := Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"vllm-aggregated-qwen3.5-4b-sim-pass":            {OK, ""},
		"vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04": {Invalid, "result.json: not JSON: unexpected EOF"},
		"vllm-aggregated-qwen3.5-4b-sim-exit-3":          {Invalid, "result.json: not JSON: invalid character"},
		"vllm-aggregated-qwen3.5-4b-sim-no-result":       {Invalid, "result.json is 100.0 MiB, over the 16.0 MiB limit (--max-result-size)"},
		"vllm-aggregated-qwen3.5-4b-sim-garbage":         {Invalid, "result.json: at /schema_version: version 7 is not supported (expected 1)"},
		"vllm-aggregated-qwen3.5-4b-sim-sleep-30":        {Invalid, "result.json is a link to " + outside + ", outside the sweep directory"},
	}
	for _, c := range run.Cells {
		w := want[c.Name]
		if c.Outcome != w[0] || !strings.HasPrefix(c.Detail, w[1]) {
			t.Errorf("%s: %s %q, want %s %q", c.Name, c.Outcome, c.Detail, w[0], w[1])
		}
	}
	_ = other

	// Missing required fields, and a result that names another cell.
	must(t, os.WriteFile(byName["vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04"], []byte(`{"schema_version": 1, "cell_id": "0123456789ab"}`), 0o644))
	dup := bytes.Replace(good, []byte(filepath.Base(filepath.Dir(okCell))), []byte(filepath.Base(filepath.Dir(byName["vllm-aggregated-qwen3.5-4b-sim-exit-3"]))), 1)
	must(t, os.WriteFile(okCell, dup, 0o644))
	run, err = Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range run.Cells {
		switch c.Name {
		case "vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04":
			if c.Outcome != Invalid || c.Detail != "result.json: at /: required property 'cases' is missing" {
				t.Errorf("missing field: %s %q", c.Outcome, c.Detail)
			}
		case "vllm-aggregated-qwen3.5-4b-sim-pass":
			if c.Outcome != Invalid || !strings.Contains(c.Detail, "but it is in the directory of cell") {
				t.Errorf("duplicate cell id: %s %q", c.Outcome, c.Detail)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copySweep(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "sweep")
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dst
}

// Two processes writing one store at once lose nothing and corrupt
// nothing: each puts 40 runs while the other does.
func TestConcurrentStoreWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	var procs []*exec.Cmd
	for w := 0; w < 2; w++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "KVSWEEP_STORE_WRITER="+path, fmt.Sprintf("KVSWEEP_STORE_WRITER_ID=%d", w))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		must(t, cmd.Start())
		procs = append(procs, cmd)
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	st, err := OpenStore(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 80 {
		t.Fatalf("%d runs stored, want 80", len(runs))
	}
	for _, r := range runs {
		if len(r.Cells) != 50 {
			t.Fatalf("run %s has %d cells", r.ID, len(r.Cells))
		}
	}
}

// TestMain runs the test binary as one writer of TestConcurrentStoreWriters
// when asked to.
func TestMain(m *testing.M) {
	if path := os.Getenv("KVSWEEP_STORE_WRITER"); path != "" {
		if err := storeWriter(path, os.Getenv("KVSWEEP_STORE_WRITER_ID")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func storeWriter(path, id string) error {
	for i := 0; i < 40; i++ {
		st, err := OpenStore(path, false)
		if err != nil {
			return err
		}
		run := &Run{ID: fmt.Sprintf("w%s-%02d", id, i), Name: "concurrent", CollectedAt: time.Now()}
		for c := 0; c < 50; c++ {
			run.Cells = append(run.Cells, CellResult{CellID: fmt.Sprintf("%012d", c), Outcome: OK, Cases: []Case{{ID: "TC-01", Verdict: Pass}}})
		}
		if err := st.Put(run); err != nil {
			return err
		}
		st.Close()
	}
	return nil
}

// The HTML report is one file: no scripts, stylesheets or images fetched.
func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, []*Run{collectTestdata(t, "testdata/base"), collectTestdata(t, "testdata/cand")}, ""); err != nil {
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
	base, cand := collectTestdata(t, "testdata/base"), collectTestdata(t, "testdata/cand")
	cmp := Compare("base-1", []*Run{base}, "cand-1", []*Run{cand}, CompareOptions{Threshold: 0.05})
	var b bytes.Buffer
	if err := WriteComparison(&b, "junit", cmp); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "compare.xml")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("xmllint", "--noout", "--schema", "testdata/junit-ant.xsd", path).CombinedOutput(); err != nil {
		t.Fatalf("xmllint: %v\n%s", err, out)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// TC-04 on aggregated got worse; four cases of the shared cell regressed.
	if s := doc.Suites[0]; s.Failures != 5 || s.Tests != 8 {
		t.Errorf("failures %d of %d tests, want 5 of 8\n%s", s.Failures, s.Tests, b.String())
	}
}
