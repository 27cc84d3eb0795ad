package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// fullDiskSweep renders a sweep of n cells of the simulated harness
// (each then running tail, a shell command, after it) into a small
// file system of its own; it returns the file system and the sweep.
func fullDiskSweep(t *testing.T, c cluster, name string, n int, tail string) (fs, dir, id string) {
	t.Helper()
	fs = sweeptest.SmallFS(t, 8<<20)
	dir = filepath.Join(fs, "sweep")
	id = fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1e9)
	geoms, names := make([]string, n), make([]string, n)
	for i := range geoms {
		names[i] = fmt.Sprintf("g%d", i)
		geoms[i] = fmt.Sprintf("  %s: {flags: {model: m%d}}", names[i], i)
	}
	spec := fmt.Sprintf(`version: 1
name: %s
container: {runtime: none}
harness:
  command: [sh, -c, 'python3 "$0" --engine vllm --results-dir "$1" && %s', %q, "{{.CellDir}}"]
  cases_flag: ""
topologies: {aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 5m}}}
geometries:
%s
matrix: {engine: [vllm], topology: [aggregated], geometry: [%s], case: [TC-01]}
`, name, tail, harness, strings.Join(geoms, "\n"), strings.Join(names, ", "))
	path := writeSpec(t, t.TempDir(), spec)
	mustKvsweep(t, c, "render", path, "--out", dir, "--sweep-id", id)
	t.Cleanup(func() { cancelSweep(t, c, dir) })
	return fs, dir, id
}

// Submit on a full disk: the intent cannot be journalled, so nothing is
// submitted and the command says why; once space is freed the same
// command submits every cell, each exactly once.
func TestSubmitOnAFullDisk(t *testing.T) {
	c := clusters(t)[0]
	fs, dir, id := fullDiskSweep(t, c, "fullsubmit", 4, "true")
	free := sweeptest.Fill(t, fs)
	_, errs, err := kvsweep(t, c, nil, "submit", dir, "--scheduler", "slurm")
	if err == nil || !strings.Contains(errs, "no space left on device") {
		t.Fatalf("submit on a full disk: %v, want the reason:\n%s", err, errs)
	}
	if live := liveJobs(t, c, id); live != "" {
		t.Fatalf("jobs were submitted that the journal does not hold:\n%s", live)
	}
	free()
	mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
	mustKvsweep(t, c, "status", dir, "--scheduler", "slurm", "--watch", "--interval", "1s", "--quiet")
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		if cs.State != scheduler.StateCompleted || cs.Attempt != 1 {
			t.Errorf("%s: %s attempt %d, want COMPLETED once\n%s", cs.Name, cs.State, cs.Attempt, cellLog(dir, cs))
		}
	}
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if subs := sweep.Submissions(recs); len(subs) != 1 || subs[0].JobID == "" {
		t.Errorf("submissions %+v, want one array with its job id", subs)
	}
}

// A job whose disk fills before it ends cannot write its exit marker: it
// leaves none rather than a marker cut short, the scheduler's record says
// how it ended, and collect completes once space is freed.
func TestExitMarkerOnAFullDisk(t *testing.T) {
	c := clusters(t)[0]
	_, dir, _ := fullDiskSweep(t, c, "fullexit", 1, `dd if=/dev/zero of="$1/fill" bs=64k 2>/dev/null; true`)
	mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
	mustKvsweep(t, c, "status", dir, "--scheduler", "slurm", "--watch", "--interval", "1s", "--quiet")
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	cell := filepath.Join(dir, sweep.CellsDir, m.Cells[0].ID)
	if _, err := os.Stat(filepath.Join(cell, "fill")); err != nil {
		t.Fatalf("the harness did not fill the disk: %v", err)
	}
	for _, f := range []string{"exit", ".exit.tmp"} {
		if _, err := os.Stat(filepath.Join(cell, f)); err == nil {
			b, _ := os.ReadFile(filepath.Join(cell, f))
			t.Errorf("%s exists on a full disk: %q", f, b)
		}
	}
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil || cells[0].State != scheduler.StateCompleted {
		t.Fatalf("the job's state from Slurm: %v %+v", err, cells)
	}
	store := filepath.Join(t.TempDir(), "history.db")
	if _, errs, err := kvsweep(t, c, nil, "collect", dir, "--scheduler", "slurm", "--store", store); err == nil || !strings.Contains(errs, "no space left on device") {
		t.Errorf("collect on the full disk: %v, want the reason:\n%s", err, errs)
	}
	if err := os.Remove(filepath.Join(cell, "fill")); err != nil {
		t.Fatal(err)
	}
	mustKvsweep(t, c, "collect", dir, "--scheduler", "slurm", "--store", store)
	run, err := testrun.ReadRun(dir)
	if err != nil || run.Cells[0].Outcome != testrun.OK {
		t.Errorf("collected once space was freed: %v %+v", err, run)
	}
}
