package testrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// A cell whose job marked two cases' windows: each case gets its
// window's figures, a case with no window none (the note says so), and
// the summary keeps a row per case and worker; a case's own metric of
// the same name stays.
func TestAddTelemetryWindows(t *testing.T) {
	dir := t.TempDir()
	cell := filepath.Join(dir, sweep.CellsDir, "0123456789ab")
	if err := os.MkdirAll(cell, 0o755); err != nil {
		t.Fatal(err)
	}
	series := `{"t":1000,"url":"http://n1:8000/metrics","role":"prefill","name":"p0","series":[{"f":"vllm:prefix_cache_queries_total","l":{"engine":"0"},"v":0},{"f":"vllm:prefix_cache_hits_total","l":{"engine":"0"},"v":0}]}
{"t":2000,"url":"http://n1:8000/metrics","role":"prefill","name":"p0","series":[{"f":"vllm:prefix_cache_queries_total","l":{"engine":"0"},"v":1000},{"f":"vllm:prefix_cache_hits_total","l":{"engine":"0"},"v":900}]}
{"t":3000,"url":"http://n1:8000/metrics","role":"prefill","name":"p0","series":[{"f":"vllm:prefix_cache_queries_total","l":{"engine":"0"},"v":2000},{"f":"vllm:prefix_cache_hits_total","l":{"engine":"0"},"v":1000}]}
`
	windows := `{"case":"TC-01","event":"start","t":1000}
{"case":"TC-01","event":"end","t":2000}
{"case":"TC-02","event":"start","t":2000}
{"case":"TC-02","event":"end","t":3000}
`
	for name, body := range map[string]string{sweep.TelemetryFile: series, sweep.CaseWindowsFile: windows} {
		if err := os.WriteFile(filepath.Join(cell, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	cells := sweep.OpenCells(root, dir)
	defer cells.Close()
	files := cells.Open("0123456789ab")
	defer files.Close()
	cr := CellResult{Cases: []result.Case{{ID: "TC-01"}, {ID: "TC-02", Metrics: result.Metrics{{Name: "prefix_cache_hit_rate", Value: 0.5}}}, {ID: "TC-03"}}}
	addTelemetry(&cr, files)
	// TC-01: 900 hits of 1000; TC-02 keeps its own 0.5 (the window's is 100/1000).
	if m, ok := cr.Cases[0].Metrics.Get("prefix_cache_hit_rate"); !ok || m.Value != 0.9 {
		t.Errorf("TC-01: %v", cr.Cases[0].Metrics)
	}
	if m, _ := cr.Cases[1].Metrics.Get("prefix_cache_hit_rate"); m.Value != 0.5 {
		t.Errorf("TC-02: %v", cr.Cases[1].Metrics)
	}
	if len(cr.Cases[2].Metrics) != 0 {
		t.Errorf("TC-03, no window: %v", cr.Cases[2].Metrics)
	}
	tm := cr.Telemetry
	if tm == nil || len(tm.Workers) != 2 || tm.Workers[1].Case != "TC-02" || tm.Workers[1].Figures["prefix_cache_hit_rate"] != 0.1 || tm.Workers[1].Role != "prefill" || tm.Workers[1].Node != "n1" {
		t.Fatalf("telemetry %+v", tm)
	}
	if !strings.Contains(tm.Note, "no case window for TC-03") {
		t.Errorf("note %q", tm.Note)
	}
}

// A case-windows.jsonl that cannot be read (here a directory) leaves the
// figures over the whole cell, and the note says why.
func TestAddTelemetryWindowsUnreadable(t *testing.T) {
	dir := t.TempDir()
	cell := filepath.Join(dir, sweep.CellsDir, "0123456789ab")
	if err := os.MkdirAll(filepath.Join(cell, sweep.CaseWindowsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	series := `{"t":1,"url":"u","series":[{"f":"sglang:token_usage","v":0.5}]}`
	if err := os.WriteFile(filepath.Join(cell, sweep.TelemetryFile), []byte(series), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	cells := sweep.OpenCells(root, dir)
	defer cells.Close()
	files := cells.Open("0123456789ab")
	defer files.Close()
	cr := CellResult{Cases: []result.Case{{ID: "TC-01"}}}
	addTelemetry(&cr, files)
	if m, ok := cr.Cases[0].Metrics.Get("kv_cache_usage_peak"); !ok || m.Value != 0.5 {
		t.Errorf("TC-01: %v", cr.Cases[0].Metrics)
	}
	if !strings.Contains(cr.Telemetry.Note, "case-windows.jsonl not read (") {
		t.Errorf("note %q", cr.Telemetry.Note)
	}
}
