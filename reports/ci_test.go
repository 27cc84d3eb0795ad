package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/testrun"
)

// ciJUnit writes kvsweep ci's JUnit, checks it against the Ant schema and
// reads back each suite's package, tests and failures.
func ciJUnit(t *testing.T, run *testrun.Run, cmp *analysis.Comparison, gates error) []junitSuite {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCIJUnit(&b, run, cmp, gates); err != nil {
		t.Fatal(err)
	}
	return validJUnit(t, b.Bytes())
}

// validJUnit checks b against the Ant JUnit schema CI servers read
// (xmllint) and returns its suites.
func validJUnit(t *testing.T, b []byte) []junitSuite {
	t.Helper()
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("xmllint", "--noout", "--schema", "testdata/junit-ant.xsd", path).CombinedOutput(); err != nil {
		t.Fatalf("xmllint: %v\n%s", err, out)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Suites
}

// kvsweep ci's JUnit fails where its gates do: the comparison's
// regressions and lost cells are failing testcases beside the run's.
func TestCIJUnitCarriesTheComparison(t *testing.T) {
	base, cand := collected(t, "base"), collected(t, "cand")
	cmp := analysis.Compare("base-1", []*testrun.Run{base}, "cand-1", []*testrun.Run{cand}, analysis.CompareOptions{Threshold: 0.05})
	gates := analysis.Check([]*testrun.Run{cand}, cmp, analysis.Gates{})
	if gates == nil {
		t.Fatal("the gates held on a regressed candidate")
	}
	suites := ciJUnit(t, cand, cmp, gates)
	if len(suites) != 2 {
		t.Fatalf("%d suites, want the run's and the comparison's", len(suites))
	}
	run, compare := suites[0], suites[1]
	if run.Package != "kvsweep."+cand.Name || compare.Package != "kvsweep.compare" || compare.ID != 1 {
		t.Errorf("suites %s (id %d), %s (id %d)", run.Package, run.ID, compare.Package, compare.ID)
	}
	// As the comparison's own JUnit: TC-04 got worse, four cases regressed.
	if compare.Failures != 5 || compare.Tests != 8 {
		t.Errorf("comparison: %d failures of %d tests, want 5 of 8", compare.Failures, compare.Tests)
	}
}

// A gate that no testcase shows still fails the file, in a testcase of
// its own; held gates and a run that shows its failure add none.
func TestCIJUnitGatesCase(t *testing.T) {
	run := collected(t, "base")
	if s := ciJUnit(t, run, nil, nil); len(s) != 1 || s[0].Failures+s[0].Errors != 0 {
		t.Fatalf("a passing run: %+v", s)
	}
	gates := errors.New("check failed: 1 cell(s) ran without provenance (--require-provenance) (x: no source-revisions.json)")
	s := ciJUnit(t, run, nil, gates)
	if len(s) != 2 || s[1].Package != "kvsweep.ci" || s[1].Failures != 1 || s[1].Tests != 1 {
		t.Fatalf("gates failed unseen: %+v", s)
	}
	f := s[1].Cases[0].Failure
	if f == nil || f.Type != "GATES" || !strings.HasPrefix(f.Message, "1 cell(s) ran without provenance") {
		t.Errorf("the gates' testcase: %+v", s[1].Cases[0])
	}
	mixed := collected(t, "mixed")
	if s := ciJUnit(t, mixed, nil, analysis.Check([]*testrun.Run{mixed}, nil, analysis.Gates{})); len(s) != 1 || s[0].Failures == 0 {
		t.Errorf("a run whose failures show: %d suites", len(s))
	}
}

// The step summary's first line is one line whatever a harness put in a
// message, and bounded.
func TestGatesLine(t *testing.T) {
	for _, c := range []struct {
		gates error
		alone string
		want  string
	}{
		{nil, "", "Gates: passed\n"},
		{nil, "No baseline on main: this run is reported alone", "Gates: passed. No baseline on main: this run is reported alone\n"},
		{errors.New("check failed: 2 regression(s) (a TC-01 ttft_ms +50.00%)"), "", "Gates: FAILED: 2 regression(s) (a TC-01 ttft_ms +50.00%)\n"},
		{errors.New("check failed: 1 INVALID case(s) (a TC-01: line\n# heading\x1b[31m)"), "", "Gates: FAILED: 1 INVALID case(s) (a TC-01: line\\n# heading\\x1b[31m)\n"},
	} {
		if got := GatesLine(c.gates, c.alone); got != c.want {
			t.Errorf("GatesLine(%v, %q) = %q, want %q", c.gates, c.alone, got, c.want)
		}
	}
	long := GatesLine(errors.New("check failed: 1 INVALID case(s) (a TC-01: "+strings.Repeat("word ", 10000)+")"), "")
	if len(long) > gatesLineMax+1 || strings.Count(long, "\n") != 1 || !strings.HasSuffix(long, " ...\n") {
		t.Errorf("a long line: %d bytes, ends %q", len(long), long[len(long)-20:])
	}
}
