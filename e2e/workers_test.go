package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/telemetry"
)

// A 2P+1D-like cell on the test cluster: three stand-in vLLM workers
// (two prefill, one decode) listed in telemetry-endpoints with role= and
// name=, each serving its own hit shares, and two cases whose windows the
// harness marks itself, with other shares in each. The report (markdown)
// and the JSON show a row per worker and case; each case gets its own
// window's figures, the cell's pooled over the workers, the connector's
// beside the GPU-local one.
func TestWorkersAndWindows(t *testing.T) {
	c := clusters(t)[0]
	tmp := t.TempDir()
	standin, _ := filepath.Abs("testdata/workers_standin.py")
	spec := fmt.Sprintf(`version: 1
name: workers
container: {runtime: none}
harness:
  command: ["python3", %q, "--results-dir", "{{.CellDir}}"]
  cases_flag: "--cases"
telemetry: {endpoints: ["http://127.0.0.1:9/metrics"], interval: 1s}
topologies: {2p1d: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [2p1d], geometry: [g], case: [TC-01, TC-02]}
`, standin)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	runCompleted(t, c, nil, path, dir, "--sweep-id", fmt.Sprintf("workers-%d", time.Now().UnixNano()%1e9))
	run := collectRun(t, c, dir)
	if len(run.Cells) != 1 || run.Cells[0].Telemetry == nil {
		t.Fatalf("cells %+v", run.Cells)
	}
	cell := run.Cells[0]
	// The shares the stand-in serves (workers_standin.py HITS).
	want := map[string]map[string][2]float64{
		"TC-01": {"prefill-0": {0.9, 0.6}, "prefill-1": {0.7, -1}, "decode-0": {0.1, -1}},
		"TC-02": {"prefill-0": {0.5, 0.2}, "prefill-1": {0.3, -1}, "decode-0": {0, -1}},
	}
	checkWorkerRows(t, cell.Telemetry, want)
	// The cell's figure per case: every worker served 1000 tokens a read,
	// each read by the same scraper loop, so the pooled hit rate is near
	// the mean of the shares; the connector's is prefill-0's alone.
	for cs, connector := range map[string]float64{"TC-01": 0.6, "TC-02": 0.2} {
		m := caseOf(cell, cs).Metrics
		if v, ok := m.Get("kv_connector_hit_rate"); !ok || math.Abs(v.Value-connector) > 1e-9 {
			t.Errorf("%s: kv_connector_hit_rate %v, want %v", cs, v, connector)
		}
		if v, ok := m.Get("prefix_cache_hit_rate"); !ok || v.Value <= 0 || v.Value >= 1 {
			t.Errorf("%s: prefix_cache_hit_rate %v", cs, v)
		}
	}
	h1, _ := caseOf(cell, "TC-01").Metrics.Get("prefix_cache_hit_rate")
	h2, _ := caseOf(cell, "TC-02").Metrics.Get("prefix_cache_hit_rate")
	if h1.Value <= h2.Value {
		t.Errorf("TC-01's window %v, TC-02's %v: the windows were not told apart", h1.Value, h2.Value)
	}
	if !strings.Contains(cell.Telemetry.Note, "figures per case window (2)") {
		t.Errorf("note %q", cell.Telemetry.Note)
	}
	md := strings.Join(strings.Fields(mustKvsweep(t, c, "report", dir, "--format", "markdown")), " ")
	for _, row := range []string{"### Telemetry per worker", "| TC-01 | prefill-0 | prefill | 127.0.0.1 | 0.9 | 0.6 |", "| TC-02 | prefill-1 | prefill | 127.0.0.1 | 0.3 | – |", "| TC-02 | decode-0 | decode | 127.0.0.1 | 0 | – |"} {
		if !strings.Contains(md, row) {
			t.Errorf("the report has no %q:\n%s", row, md)
		}
	}
	js := mustKvsweep(t, c, "report", dir, "--format", "json")
	for _, s := range []string{`"worker": "prefill-1"`, `"role": "decode"`, `"kv_connector_hit_rate": 0.6`} {
		if !strings.Contains(js, s) {
			t.Errorf("the JSON has no %s", s)
		}
	}
}

// checkWorkerRows holds each worker's row per case to the shares its
// stand-in served in that case (a connector share of -1: none).
func checkWorkerRows(t *testing.T, tm *telemetry.Summary, want map[string]map[string][2]float64) {
	t.Helper()
	seen := 0
	for _, w := range tm.Workers {
		sh, ok := want[w.Case][w.Worker]
		if !ok {
			t.Errorf("an unexpected row %+v", w)
			continue
		}
		seen++
		if v := w.Figures["prefix_cache_hit_rate"]; math.Abs(v-sh[0]) > 1e-9 {
			t.Errorf("%s %s: prefix_cache_hit_rate %v, want %v", w.Case, w.Worker, v, sh[0])
		}
		if v, ok := w.Figures["kv_connector_hit_rate"]; ok != (sh[1] >= 0) || ok && math.Abs(v-sh[1]) > 1e-9 {
			t.Errorf("%s %s: kv_connector_hit_rate %v (%v), want %v", w.Case, w.Worker, v, ok, sh[1])
		}
		role := map[bool]string{true: "prefill", false: "decode"}[strings.HasPrefix(w.Worker, "prefill")]
		if w.Role != role || w.Node != "127.0.0.1" || w.Figures["kv_cache_usage_peak"] != 0.25 {
			t.Errorf("%s %s: %+v", w.Case, w.Worker, w)
		}
	}
	if seen != 6 {
		t.Errorf("%d rows of 6: %+v", seen, tm.Workers)
	}
}
