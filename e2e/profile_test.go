package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// A profiled case on the test cluster. nsys: the harness starts its
// stand-in worker through kvsweep job case wrap with the nsys stand-in
// on its PATH, which writes the worker's report when the worker ends;
// nsys-missing: no nsys, so the worker runs unprofiled and the row says
// so, passing. torch: the case's window opens a second after the case
// starts (profile.delay) through the stand-in vLLM server's /start_profile
// and closes at the case's end, and the server writes its trace; the
// same server started without --profiler-config answers 404, which is a
// note (PASS) or, with profile.required, makes the case INVALID. The
// profile's files are listed in the markdown summary, linked in the HTML
// page and attached in JUnit.
func TestProfileWindow(t *testing.T) {
	c := clusters(t)[0]
	harness, _ := filepath.Abs("testdata/profile-harness.sh")
	for _, tc := range []struct {
		name, mode, profile, verdict, file, note string
	}{
		{"nsys", "nsys", `{tool: nsys, workers: ["0"]}`, "PASS", "profile/0.nsys-rep", ""},
		{"nsys-missing", "nsys-missing", `{tool: nsys, workers: ["0"]}`, "PASS", "", "nsys is not on the PATH"},
		{"torch", "torch", `{tool: torch, cases: [TC-01], workers: ["0"], delay: 1s, duration: 10m}`, "PASS", "profile/torch/standin-rank0.", ""},
		{"torch-off", "torch-off", `{tool: torch, cases: [TC-01]}`, "PASS", "", "404"},
		{"torch-required", "torch-off", `{tool: torch, cases: [TC-01], required: true}`, testrun.Invalid, "", "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			port := freePort(t)
			spec := fmt.Sprintf(`version: 1
name: profile
container: {runtime: none}
harness:
  command: [%q, "{{.CellDir}}", "%d", %q]
  cases_flag: ""
profile: %s
topologies: {aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 300M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, harness, port, tc.mode, tc.profile)
			path := writeSpec(t, tmp, spec)
			dir := filepath.Join(tmp, "sweep")
			cells := runCompleted(t, c, nil, path, dir, "--sweep-id", fmt.Sprintf("profile-%s-%d", tc.name, time.Now().UnixNano()%1e9))
			cellDir := filepath.Join(dir, sweep.CellsDir, cells[0].ID)
			log, _ := os.ReadFile(filepath.Join(cellDir, sweep.ProfileLogFile))
			run := collectRun(t, c, dir)
			cell := run.Cells[0]
			tc01 := caseOf(cell, "TC-01")
			t.Logf("TC-01 %s %q; profile %+v\nprofile.jsonl:\n%s", tc01.Verdict, tc01.Message, cell.Profile, log)
			if tc01.Verdict != tc.verdict || (tc.verdict != "PASS" && !strings.Contains(tc01.Message, "profile.required")) {
				t.Errorf("TC-01: %s %q, want %s", tc01.Verdict, tc01.Message, tc.verdict)
			}
			p := cell.Profile
			if p == nil {
				t.Fatal("the collected cell has no profile")
			}
			notes := strings.Join(p.Notes, "; ")
			if (tc.note == "") != (notes == "") || !strings.Contains(notes, tc.note) {
				t.Errorf("the profile's notes %q, want %q", notes, tc.note)
			}
			if tc.file == "" {
				if len(p.Files) != 0 {
					t.Errorf("files %+v, want none", p.Files)
				}
				checkReports(t, c, dir, "", tc.note)
				return
			}
			var file string
			for _, f := range p.Files {
				if strings.HasPrefix(f.Path, tc.file) && f.Bytes > 0 {
					file = f.Path
				}
			}
			if file == "" {
				t.Fatalf("no profile file %s* in %+v", tc.file, p.Files)
			}
			checkReports(t, c, dir, filepath.ToSlash(filepath.Join(sweep.CellsDir, cell.CellID, file)), "")
		})
	}
}

// checkReports holds the reports to the profile: the markdown summary's
// Profiles section names the file (or the note), the HTML page links it
// and JUnit attaches it by its absolute path.
func checkReports(t *testing.T, c cluster, dir, rel, note string) {
	t.Helper()
	md := mustKvsweep(t, c, "report", dir, "--format", "markdown")
	if !strings.Contains(md, "### Profiles") || (rel != "" && !strings.Contains(md, rel)) || (note != "" && !strings.Contains(md, note)) {
		t.Errorf("the markdown summary does not show the profile %q %q:\n%s", rel, note, md)
	}
	if rel == "" {
		return
	}
	html := mustKvsweep(t, c, "report", dir, "--format", "html")
	if !strings.Contains(html, `<a href="`+rel+`">`) {
		t.Errorf("the HTML page does not link %s:\n%s", rel, html)
	}
	abs, _ := filepath.Abs(filepath.Join(dir, filepath.FromSlash(rel)))
	junit := mustKvsweep(t, c, "report", dir, "--format", "junit")
	if !strings.Contains(junit, "[[ATTACHMENT|"+abs+"]]") {
		t.Errorf("JUnit does not attach %s:\n%s", abs, junit)
	}
}
