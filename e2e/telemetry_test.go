package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// What the engines and the client say, on the test cluster: each cell
// serves a stand-in of vLLM's /metrics (v0.11's families and types) that
// kvsweep job scrape reads beside the harness, and writes a real output
// file of vLLM's bench serve. The collected rows carry the client's
// metrics, the hit rate derived from the counters, and the node's
// fingerprint; the rule on the hit rate turns the low-hit cell's PASS
// into INVALID. A dead endpoint is recorded and fails nothing.
func TestTelemetryAndClientResult(t *testing.T) {
	c := clusters(t)[0]
	tmp := t.TempDir()
	standin, _ := filepath.Abs("testdata/bench-standin.sh")
	bench, _ := filepath.Abs("../../shared/realout/vllm-1.json")
	spec := fmt.Sprintf(`version: 1
name: telemetry
container: {runtime: none}
harness:
  command: [%q, "{{.CellDir}}", "{{.Params.hit}}", %q]
  cases_flag: ""
  result: {format: vllm-bench, file: bench.json}
telemetry: {endpoints: ["http://127.0.0.1:9/metrics"], interval: 1s}
cases:
  TC-01: {require: ["prefix_cache_hit_rate >= 0.5", "failed == 0"]}
topologies: {aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], hit: ["0.8", "0.2"]}
`, standin, bench)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	runCompleted(t, c, nil, path, dir, "--sweep-id", fmt.Sprintf("telemetry-%d", time.Now().UnixNano()%1e9))
	run := collectRun(t, c, dir)
	for _, cell := range run.Cells {
		tc := caseOf(cell, "TC-01")
		hit, _ := tc.Metrics.Get("prefix_cache_hit_rate")
		want := map[string]float64{"0.8": 0.8, "0.2": 0.2}[cell.Params["hit"]]
		if math.Abs(hit.Value-want) > 1e-9 {
			t.Errorf("%s: prefix_cache_hit_rate %v, want %v", cell.Name, hit, want)
		}
		if m, ok := tc.Metrics.Get("ttft_p99_ms"); !ok || m.Value != 734.4049174101428 {
			t.Errorf("%s: the client's ttft_p99_ms %v", cell.Name, m)
		}
		if tm := cell.Telemetry; tm == nil || tm.Samples < 3 || tm.Failed < 1 || !strings.Contains(tm.Note, "127.0.0.1:9") {
			t.Errorf("%s: telemetry %+v, want the samples and the dead endpoint's failures", cell.Name, tm)
		}
		if cell.Hardware == nil || cell.Hardware.Node == "" {
			t.Errorf("%s: no hardware fingerprint", cell.Name)
		}
		wantVerdict := map[string]string{"0.8": "PASS", "0.2": testrun.Invalid}[cell.Params["hit"]]
		if tc.Verdict != wantVerdict || (wantVerdict != "PASS" && !strings.Contains(tc.Message, "prefix_cache_hit_rate")) {
			t.Errorf("%s: %s %q, want %s", cell.Name, tc.Verdict, tc.Message, wantVerdict)
		}
	}
}

func caseOf(c testrun.CellResult, id string) result.Case {
	for _, cs := range c.Cases {
		if cs.ID == id {
			return cs
		}
	}
	return result.Case{}
}
