package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// A profiled cell's files are listed in the summary's Profiles section
// with what could not be profiled, attached in JUnit and linked in the
// HTML page; a cell not profiled shows nothing of it.
func TestProfileReports(t *testing.T) {
	dir := t.TempDir()
	cd := filepath.Join(dir, "cells", "c1", "profile")
	if err := os.MkdirAll(cd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cd, "0.nsys-rep"), []byte("report\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &testrun.Run{ID: "s-1", Name: "s", Dir: dir, Cells: []testrun.CellResult{
		{CellID: "c1", Name: "vllm-aggregated-g", Outcome: testrun.OK, Planned: []string{"TC-01"},
			Cases:    []result.Case{{ID: "TC-01", Verdict: result.Pass}},
			Evidence: []string{"profile/0.nsys-rep"},
			Profile: &testrun.ProfileResult{Tool: "nsys", Files: []testrun.ProfileFile{{Path: "profile/0.nsys-rep", Bytes: 7}},
				Notes: []string{"nsys wrote no report for worker 1"}}},
		{CellID: "c2", Name: "vllm-aggregated-h", Outcome: testrun.OK, Planned: []string{"TC-01"},
			Cases: []result.Case{{ID: "TC-01", Verdict: result.Pass}}},
	}}
	var md bytes.Buffer
	if err := WriteSummary(&md, "markdown", r); err != nil {
		t.Fatal(err)
	}
	_, profiles, _ := strings.Cut(md.String(), "### Profiles")
	for _, want := range []string{"| vllm-aggregated-g | nsys ", "| cells/c1/profile/0.nsys-rep (7 B) |", "| nsys wrote no report for worker 1 (not required: fails nothing) |"} {
		if !strings.Contains(profiles, want) {
			t.Errorf("the summary's Profiles section lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(profiles, "vllm-aggregated-h") || !strings.Contains(md.String(), "- `cells/c1/profile/0.nsys-rep` (7 B)") {
		t.Errorf("a cell not profiled is in the Profiles section, or the profile is not among the evidence:\n%s", md.String())
	}
	var ju bytes.Buffer
	if err := WriteJUnit(&ju, r); err != nil {
		t.Fatal(err)
	}
	if want := "[[ATTACHMENT|" + filepath.Join(cd, "0.nsys-rep") + "]]"; !strings.Contains(ju.String(), want) {
		t.Errorf("JUnit lacks %q:\n%s", want, ju.String())
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, []*testrun.Run{r}, "kvsweep"); err != nil {
		t.Fatal(err)
	}
	if want := `<a href="cells/c1/profile/0.nsys-rep">`; !strings.Contains(page.String(), want) {
		t.Errorf("the page lacks %q", want)
	}
	r.Cells = r.Cells[1:]
	md.Reset()
	if err := WriteSummary(&md, "markdown", r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Profiles") {
		t.Errorf("no cell was profiled, yet:\n%s", md.String())
	}
}
