package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/testrun"
)

// GPU health on the two-node cluster: the job snapshots its GPUs' health
// counters before and after the harness, with stand-in nvidia-smi and
// dmesg on its PATH whose counters move during the cell on the first node
// it lands on only (7 NVLink replay errors, an Xid 79). The harness
// passes, yet the attempt failed outside the test: run --wait says so and
// submits it again away from that node, where it passes; the collected
// cell's earlier attempt is infra with the node, the counters and
// before→after; the report's GPU health section and kvsweep nodes name
// the node with its counters.
func TestGPUHealthFaultRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the two-node Slurm cluster of scripts/slurm-env.sh (not with -short)")
	}
	conf := os.Getenv("KVSWEEP_SLURM_TWONODE")
	if conf == "" {
		t.Fatal("KVSWEEP_SLURM_TWONODE is not set: scripts/slurm-env.sh start; eval \"$(scripts/slurm-env.sh env)\"")
	}
	c := cluster{name: "twonode", conf: conf}
	tmp := t.TempDir()
	state := filepath.Join(tmp, "standin")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	standins, _ := filepath.Abs("testdata/health-standin")
	spec := fmt.Sprintf(`version: 1
name: gpuhealth
container: {runtime: none}
retry: {infra: 1}
harness:
  command: [python3, %q, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}", --sim, pass]
telemetry: {endpoints: ["http://127.0.0.1:9/metrics"], interval: 5s}
topologies:
  aggregated: {resources: {cpus_per_task: 1, mem: 100M, time: 3m}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, harness)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	env := []string{"PATH=" + standins + string(os.PathListSeparator) + os.Getenv("PATH"), "STANDIN_HEALTH_DIR=" + state}
	t.Cleanup(func() { cancelSweep(t, c, dir) })
	run := exec.Command(binary, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s")
	run.Env = append(append(os.Environ(), c.env()...), env...)
	done := make(chan struct{})
	var out strings.Builder
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var runErr error
	go func() { runErr = run.Wait(); close(done) }()
	t.Cleanup(func() { _ = run.Process.Kill(); <-done })
	select {
	case <-done:
	case <-time.After(6 * time.Minute):
		t.Fatalf("run --wait did not end:\n%s", out.String())
	}
	faulty, err := os.ReadFile(filepath.Join(state, "faulty"))
	if err != nil {
		t.Fatalf("the stand-in nvidia-smi never ran in the job: %v\n%s", err, out.String())
	}
	node := strings.TrimSpace(string(faulty))
	if runErr != nil || !strings.Contains(out.String(), "failed outside the test (GPU_FAULT on "+node+", attempt 1); submitting it again away from "+node) {
		t.Fatalf("run --wait (%v) did not retry the cell away from %s:\n%s", runErr, node, out.String())
	}
	store := filepath.Join(tmp, "history.db")
	mustKvsweep(t, c, "collect", dir, "--store", store, "--scheduler", "slurm")
	var r testrun.Run
	if err := json.Unmarshal([]byte(mustKvsweep(t, c, "report", dir, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	cell := r.Cells[0]
	if cell.Outcome != testrun.OK || cell.Class != "" || cell.Attempts != 2 || cell.Nodes == node || len(cell.Earlier) != 1 {
		t.Fatalf("the cell: %s [%s] on %s, %d attempts, earlier %+v", cell.Outcome, cell.Class, cell.Nodes, cell.Attempts, cell.Earlier)
	}
	first := cell.Earlier[0]
	if first.Class != testrun.ClassInfra || first.Nodes != node || first.GPUFault == nil ||
		strings.Join(first.GPUFault.Counters(), ",") != "nvlink.replay_errors,xid" {
		t.Errorf("the first attempt: %+v (fault %+v)", first, first.GPUFault)
	}
	evidence := "on " + node + ": GPU 0 (GPU-00000000): nvlink.replay_errors 0→7; GPU 0 (GPU-00000000): xid 0→1 (Xid 79: "
	if first.GPUFault == nil || !strings.HasPrefix(first.GPUFault.Evidence(), evidence) {
		t.Errorf("the first attempt's evidence: %+v, want %q...", first.GPUFault, evidence)
	}
	if cell.Health != nil {
		t.Errorf("the retry on %s saw its GPU counters move: %+v", cell.Nodes, cell.Health)
	}
	md := mustKvsweep(t, c, "report", dir)
	if !strings.Contains(md, "### GPU health") || !strings.Contains(md, "an earlier attempt's GPUs failed under it "+evidence) ||
		!strings.Contains(md, "OK (after 1 infra retry: COMPLETED on "+node+")") {
		t.Errorf("the report:\n%s", md)
	}
	ledger := mustKvsweep(t, c, "nodes", "--store", store)
	if !regexp.MustCompile(`(?m)^ ` + regexp.QuoteMeta(node) + ` +\| 1 +\| GPU_FAULT x1 \(nvlink.replay_errors x1, xid x1\) +\| 1 `).MatchString(ledger) {
		t.Errorf("kvsweep nodes:\n%s", ledger)
	}
}
