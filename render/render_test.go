package render

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
)

func load(t testing.TB, path string, src []byte) (*matrix.Spec, []matrix.Cell) {
	t.Helper()
	s, cells, err := matrix.ParseCells(path, src)
	if err != nil {
		t.Fatal(err)
	}
	return s, cells
}

func renderSpec(t testing.TB, path string, src []byte, opts Options) (string, *sweep.Manifest) {
	t.Helper()
	s, cells := load(t, path, src)
	dir := t.TempDir()
	m, err := Render(s, src, cells, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// The job script of every topology kind for every container runtime.
func TestGoldenScripts(t *testing.T) {
	base, err := os.ReadFile("testdata/all-topologies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range matrix.Runtimes {
		t.Run(rt, func(t *testing.T) {
			src := bytes.Replace(base, []byte("runtime: RUNTIME"), []byte("runtime: "+rt), 1)
			dir, m := renderSpec(t, "all-topologies.yaml", src, Options{SweepID: "golden-" + rt})
			if len(m.Jobs) != 4 {
				t.Fatalf("got %d jobs, want one per topology", len(m.Jobs))
			}
			for _, j := range m.Jobs {
				got, err := os.ReadFile(filepath.Join(dir, j.Script))
				if err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join("testdata", "golden", rt, j.Name+".sbatch"), got)
				shellcheck(t, filepath.Join(dir, j.Script))
			}
		})
	}
	t.Run("no-array", func(t *testing.T) {
		src := bytes.Replace(base, []byte("runtime: RUNTIME"), []byte("runtime: pyxis"), 1)
		dir, m := renderSpec(t, "all-topologies.yaml", src, Options{SweepID: "golden-single", NoArray: true})
		j := m.Jobs[0]
		if j.Array || m.Cells[0].Index != 0 {
			t.Fatalf("no-array job has a table: %+v", j)
		}
		got, _ := os.ReadFile(filepath.Join(dir, j.Script))
		golden.Check(t, filepath.Join("testdata", "golden", "no-array.sbatch"), got)
		shellcheck(t, filepath.Join(dir, j.Script))
	})
}

// Every script of the shipped Phase 1 spec passes bash -n and shellcheck.
func TestPhase1ScriptsLint(t *testing.T) {
	src, err := os.ReadFile("../examples/phase1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, m := renderSpec(t, "phase1.yaml", src, Options{})
	for _, j := range m.Jobs {
		shellcheck(t, filepath.Join(dir, j.Script))
	}
}

// shellcheck fails the test on any finding at default severity, and when
// shellcheck is missing (the test command installs it).
func shellcheck(t *testing.T, path string) {
	t.Helper()
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Errorf("bash -n %s: %v\n%s", path, err, out)
	}
	bin, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Fatalf("shellcheck is not installed (scripts/test.sh installs it): %v", err)
	}
	if out, err := exec.Command(bin, path).CombinedOutput(); err != nil {
		t.Errorf("shellcheck %s: %v\n%s", path, err, out)
	}
}

func TestPlanGolden(t *testing.T) {
	src, err := os.ReadFile("../examples/phase1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, cells := load(t, "phase1.yaml", src)
	m, err := Plan(s, cells, Options{SweepID: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"table", "markdown", "json"} {
		var b bytes.Buffer
		if err := WritePlan(&b, m, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "plan."+f), b.Bytes())
	}
}

func TestSplitAtMaxArraySize(t *testing.T) {
	src, _ := os.ReadFile("testdata/all-topologies.yaml")
	src = bytes.Replace(src, []byte("runtime: RUNTIME"), []byte("runtime: none"), 1)
	src = bytes.Replace(src, []byte("case: [TC-01, TC-02]"), []byte("case: [TC-01, TC-02]\n  repeat: [a, b, c, d, e]"), 1)
	dir, m := renderSpec(t, "s.yaml", src, Options{SweepID: "split", MaxArraySize: 2})
	// 5 cells per topology at 2 per array: 3 arrays per topology.
	if len(m.Jobs) != 12 {
		t.Fatalf("got %d jobs, want 12", len(m.Jobs))
	}
	tab, _ := os.ReadFile(filepath.Join(dir, "jobs", "aggregated.2.cells"))
	if n := strings.Count(string(tab), "\n"); n != 1 {
		t.Errorf("last chunk has %d cells, want 1", n)
	}
}

// Re-rendering keeps the sweep id and each cell's place; new cells become
// new jobs; dropping cells is refused.
func TestRerenderKeepsPlaces(t *testing.T) {
	src, _ := os.ReadFile("testdata/all-topologies.yaml")
	src = bytes.Replace(src, []byte("runtime: RUNTIME"), []byte("runtime: none"), 1)
	s, cells := load(t, "s.yaml", src)
	dir := t.TempDir()
	m1, err := Render(s, src, cells, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wider := bytes.Replace(src, []byte("engine: [vllm]"), []byte("engine: [vllm, sglang]"), 1)
	s2, cells2 := load(t, "s.yaml", wider)
	m2, err := Render(s2, wider, cells2, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m2.SweepID != m1.SweepID {
		t.Errorf("sweep id changed: %s -> %s", m1.SweepID, m2.SweepID)
	}
	places := map[string]string{}
	for _, c := range m2.Cells {
		places[c.ID] = c.Job + "#" + string(rune('0'+c.Index))
	}
	for _, c := range m1.Cells {
		if got := places[c.ID]; got != c.Job+"#"+string(rune('0'+c.Index)) {
			t.Errorf("cell %s moved from %s#%d to %s", c.Name, c.Job, c.Index, got)
		}
	}
	if len(m2.Jobs) != 8 {
		t.Errorf("got %d jobs, want 4 old + 4 new", len(m2.Jobs))
	}
	if _, err := Render(s, src, cells, dir, Options{}); err == nil || !strings.Contains(err.Error(), "no longer has 4 cell(s)") {
		t.Errorf("dropping cells: got %v", err)
	}
}

// A render that fails leaves nothing behind: no half-written sweep
// directory that a later submit could pick up.
func TestFailedRenderLeavesNothing(t *testing.T) {
	src, err := os.ReadFile("../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, cells := load(t, "../examples/quickstart.yaml", src)
	tmpl := t.TempDir()
	// A site template that refers to a field the data does not have.
	writeFile(t, filepath.Join(tmpl, "broken.tmpl"), `{{define "body/aggregated"}}{{.NoSuchField}}{{end}}`, 0o644)
	parent := t.TempDir()
	dir := filepath.Join(parent, "sweep")
	if _, err := Render(s, src, cells, dir, Options{TemplatesDir: tmpl}); err == nil {
		t.Fatal("a broken template rendered")
	}
	left, _ := os.ReadDir(parent)
	if len(left) != 0 {
		t.Errorf("a failed render left %d entries: %v", len(left), left)
	}
}

// Engines: each cell's argv has its engine's harness and args, and an
// engine with an image and environment of its own gets a job script that
// runs that image with that environment.
func TestGoldenEngines(t *testing.T) {
	src, err := os.ReadFile("testdata/engines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, m := renderSpec(t, "testdata/engines.yaml", src, Options{SweepID: "engines-1"})
	var b strings.Builder
	for _, c := range m.Cells {
		fmt.Fprintf(&b, "%s\n  job:   %s\n  image: %s\n  argv:  %s\n", c.Name, c.Job, m.ImageOf(c.Job), strings.Join(c.Argv, " "))
	}
	golden.Check(t, "testdata/golden/engines.txt", []byte(b.String()))
	script, err := os.ReadFile(filepath.Join(dir, sweep.JobsDir, "aggregated-sglang.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"IMAGE=registry.example.com/kvcr/quick-start-sglang:v0.2.0@sha256:0c1d2e3f", "export SGLANG_HICACHE=kvcr", "export PYTHONHASHSEED=0"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("the sglang job script lacks %q", want)
		}
	}
	vllm, _ := os.ReadFile(filepath.Join(dir, sweep.JobsDir, "aggregated.sbatch"))
	if strings.Contains(string(vllm), "SGLANG_HICACHE") || strings.Contains(string(vllm), "quick-start-sglang") {
		t.Error("the vLLM job script has the SGLang engine's image or environment")
	}
	// The spec's services start in the engines' jobs; the bare probe,
	// which says services: [], starts none.
	for _, want := range []string{"launch head etcd", "launch head nats-server", "job etcd-wait", "job nats-wait"} {
		if !strings.Contains(string(vllm), want) && !strings.Contains(string(script), want) {
			t.Errorf("the engines' job scripts lack %q", want)
		}
	}
	bare, err := os.ReadFile(filepath.Join(dir, sweep.JobsDir, "aggregated-vllm-bare.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(bare), "launch head etcd") || strings.Contains(string(bare), "nats-server") {
		t.Error("the bare probe's job starts a service its engine says it does not need")
	}
}

// A render that meets a full file system fails with the reason and leaves
// nothing behind; once space is freed, the same render completes.
func TestRenderFullDisk(t *testing.T) {
	src, err := os.ReadFile("../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, cells := load(t, "../examples/quickstart.yaml", src)
	fs := sweeptest.SmallFS(t, 1<<20)
	dir := filepath.Join(fs, "sweep")
	free := sweeptest.Fill(t, fs)
	if _, err := Render(s, src, cells, dir, Options{Binary: "/bin/true"}); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("render on a full disk: %v, want the reason", err)
	}
	if left, _ := os.ReadDir(fs); len(left) != 1 {
		t.Errorf("a failed render left %d entries beside the filler: %v", len(left)-1, left)
	}
	free()
	m, err := Render(s, src, cells, dir, Options{Binary: "/bin/true"})
	if err != nil {
		t.Fatalf("render once space is free: %v", err)
	}
	if back, err := sweep.ReadManifest(dir); err != nil || len(back.Cells) != len(m.Cells) {
		t.Errorf("the manifest after space was freed: %v", err)
	}
}
