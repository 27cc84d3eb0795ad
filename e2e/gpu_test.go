package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/testrun"
)

// What the GPUs did, on the test cluster: the job runs kvsweep job
// gpu-sample beside the harness with the stand-in nvidia-smi on its PATH
// (two GPUs: the first's power and SM clock move, the second reports no
// power); the collected cell carries each GPU's figures, and the report
// shows them in markdown and JSON.
func TestGPUTelemetry(t *testing.T) {
	c := clusters(t)[0]
	tmp := t.TempDir()
	standin, _ := filepath.Abs("testdata/gpu-standin.sh")
	smiDir, _ := filepath.Abs("testdata/nvidia-smi")
	bench, _ := filepath.Abs("../../shared/realout/vllm-1.json")
	spec := fmt.Sprintf(`version: 1
name: gpu
container: {runtime: none}
harness:
  command: [%q, "{{.CellDir}}", "12", %q]
  cases_flag: ""
  result: {format: vllm-bench, file: bench.json}
telemetry: {endpoints: ["http://127.0.0.1:9/metrics"], interval: 1s, gpu: {interval: 200ms}}
cases:
  TC-01: {require: ["failed == 0"]}
topologies: {aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, standin, bench)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	env := []string{"PATH=" + smiDir + string(os.PathListSeparator) + os.Getenv("PATH")}
	runCompleted(t, c, env, path, dir, "--sweep-id", fmt.Sprintf("gpu-%d", time.Now().UnixNano()%1e9))
	// The sampler and its nvidia-smi ended with the job.
	waitGone(t, "testdata/nvidia-smi/nvidia-smi --query-gpu", "the stand-in nvidia-smi")
	run := collectRun(t, c, dir)
	cell := run.Cells[0]
	g := cell.GPU
	if g == nil || len(g.GPUs) != 2 || g.Samples < 12 || g.Failed != 0 {
		t.Fatalf("%s: GPU figures %+v", cell.Name, g)
	}
	g0, g1 := g.GPUs[0], g.GPUs[1]
	if g0.UUID != "GPU-00000000-1111-2222-3333-444444444444" || g0.PowerW == nil || g0.PowerW.Min != 100.5 || g0.PowerW.Max != 140.5 ||
		g0.SMClockMHz == nil || g0.SMClockMHz.Min != 1200 || g0.SMClockMHz.Max != 1980 || g0.MemTotalMiB != 81559 || g0.TempC == nil || g0.TempC.Max < 44 {
		t.Errorf("GPU 0: %+v", g0)
	}
	if g1.PowerW != nil || g1.MemUtilPct != nil || g1.UtilPct == nil || g1.UtilPct.Max != 0 {
		t.Errorf("GPU 1 (no power, no memory utilisation): %+v", g1)
	}
	if tc := caseOf(cell, "TC-01"); tc.Verdict != "PASS" {
		t.Errorf("TC-01: %s %q", tc.Verdict, tc.Message)
	}
	md := mustKvsweep(t, c, "report", dir, "--format", "markdown")
	if !strings.Contains(md, "### GPUs") || !strings.Contains(md, fmt.Sprintf("| %s | 0   |", cell.Name)) || !strings.Contains(md, " / 140 ") {
		t.Errorf("the report shows no GPU rows:\n%s", md)
	}
	var rep testrun.Run
	if err := json.Unmarshal([]byte(mustKvsweep(t, c, "report", dir, "--format", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	if got := rep.Cells[0].GPU; got == nil || len(got.GPUs) != 2 || got.GPUs[0].PowerW.Max != 140.5 {
		t.Errorf("the JSON report's GPU figures: %+v", got)
	}
}
