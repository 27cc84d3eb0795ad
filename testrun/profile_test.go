package testrun

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// profiledCell is the passing cell of the mixed sweep with a profile
// folder: worker 0's nsys report, a torch trace, the job's own files,
// a link out of the sweep, and profile.jsonl with a refused start, a
// worker nsys wrapped that wrote no report, and a line cut short.
func profiledCell(t *testing.T) (*cacheCell, *sweep.Manifest) {
	t.Helper()
	c := newCacheCell(t)
	pd := filepath.Join(c.cellDir, sweep.ProfileDir)
	sweeptest.Must(t, os.MkdirAll(filepath.Join(pd, "torch", "TC-01", "0"), 0o755))
	for name, body := range map[string]string{
		"0.nsys-rep":                         "report",
		"torch/TC-01/0/w.1.pt.trace.json.gz": "trace",
		".case-54432d3031.lock":              "",
		"window.log":                         "",
		"profile.jsonl": `{"t":1,"event":"wrap","worker":"0","target":"nsys profile -o 0","ok":true}
{"t":2,"event":"wrap","worker":"1","target":"nsys profile -o 1","ok":true}
{"t":3,"event":"start","case":"TC-01","worker":"0","target":"http://127.0.0.1:8000/start_profile","ok":false,"detail":"404 Not Found"}
{"t":4,"event":
`,
	} {
		sweeptest.Must(t, os.WriteFile(filepath.Join(pd, filepath.FromSlash(name)), []byte(body), 0o644))
	}
	sweeptest.Must(t, os.Symlink("/etc/passwd", filepath.Join(pd, "passwd.nsys-rep")))
	m := *c.m
	return c, &m
}

func collectProfiled(t *testing.T, c *cacheCell, m *sweep.Manifest) (*Run, CellResult) {
	t.Helper()
	run, err := Collect(c.dir, CollectOptions{Manifest: m, Now: sweeptest.Now})
	sweeptest.Must(t, err)
	for _, cr := range run.Cells {
		if cr.Name == "vllm-aggregated-qwen3.5-4b-sim-pass" {
			return run, cr
		}
	}
	t.Fatal("no passing cell")
	return nil, CellResult{}
}

// Collect lists the profile's files (never the job's own, never a link)
// among the cell's evidence, says what could not be profiled, and fails
// nothing unless the spec requires the profile.
func TestCollectProfile(t *testing.T) {
	c, m := profiledCell(t)
	m.Profile = &sweep.ProfilePlan{Tool: "nsys", Cases: []string{"TC-01"}}
	_, cr := collectProfiled(t, c, m)
	p := cr.Profile
	if p == nil {
		t.Fatal("no profile")
	}
	var paths []string
	for _, f := range p.Files {
		paths = append(paths, f.Path)
	}
	want := []string{"profile/0.nsys-rep", "profile/torch/TC-01/0/w.1.pt.trace.json.gz"}
	if !slices.Equal(paths, want) {
		t.Errorf("files %q, want %q", paths, want)
	}
	for _, w := range want {
		if !slices.Contains(cr.Evidence, w) {
			t.Errorf("evidence %q lacks %s", cr.Evidence, w)
		}
	}
	notes := strings.Join(p.Notes, "\n")
	for _, w := range []string{
		"left out: profile/passwd.nsys-rep (symbolic link, not followed)",
		"nsys wrote no report for worker 1",
		"start of TC-01 on worker 0 (http://127.0.0.1:8000/start_profile): 404 Not Found",
		"profile/profile.jsonl:4: not a profile line",
	} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
	if tc := cr.Cases[0]; tc.Verdict != result.Pass || cr.Class != "" {
		t.Errorf("a profile not required failed the cell: %s %q [%s]", tc.Verdict, tc.Message, cr.Class)
	}
	m.Profile.Required = true
	_, cr = collectProfiled(t, c, m)
	if tc := cr.Cases[0]; tc.Verdict != Invalid || !strings.Contains(tc.Message, "profile.required") || cr.Class != ClassTest {
		t.Errorf("a required profile not taken: %s %q [%s]", tc.Verdict, tc.Message, cr.Class)
	}
}

// ci --artifacts gathers the profile of a cell that passed, and only
// its profile.
func TestGatherProfiles(t *testing.T) {
	c, m := profiledCell(t)
	m.Profile = &sweep.ProfilePlan{Tool: "torch"}
	run, cr := collectProfiled(t, c, m)
	if !passed(cr) {
		t.Fatalf("the cell did not pass: %+v", cr)
	}
	dst := filepath.Join(t.TempDir(), "art")
	g, err := run.GatherArtifacts(dst, 1<<20)
	sweeptest.Must(t, err)
	listing, _ := os.ReadFile(filepath.Join(dst, "ARTIFACTS.txt"))
	if g.Profiled != 1 || !strings.Contains(string(listing), "with the profiles of 1 cells that passed") {
		t.Errorf("gathered %+v:\n%s", g, listing)
	}
	base := filepath.Join(dst, "cells", cr.CellID)
	for _, f := range cr.Profile.Files {
		if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(f.Path))); err != nil {
			t.Errorf("%s was not gathered: %v", f.Path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "result.json")); err == nil {
		t.Error("a passing cell's other files were gathered")
	}
}
