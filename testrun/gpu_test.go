package testrun

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/sweep"
)

// A cell whose job sampled its GPUs carries each GPU's figures, through
// results.json and back; a cell that wrote no samples says so; a sweep
// without GPU sampling has none.
func TestCollectGPU(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	mpath := filepath.Join(dir, sweep.ManifestFile)
	b, err := os.ReadFile(mpath)
	sweeptest.Must(t, err)
	sweeptest.Must(t, os.WriteFile(mpath, []byte(strings.Replace(string(b), `"jobs": [`,
		`"telemetry": {"endpoints": ["http://127.0.0.1:9/metrics"], "interval_s": 10, "gpu_interval_ms": 2000}, "jobs": [`, 1)), 0o644))
	m, err := sweep.ReadManifest(dir)
	sweeptest.Must(t, err)
	var pass string
	for _, c := range m.Cells {
		if c.Name == "vllm-aggregated-qwen3.5-4b-sim-pass" {
			pass = c.ID
		}
	}
	samples := `{"t":1,"gpu":0,"uuid":"GPU-a","v":{"power.draw":300,"utilization.gpu":90,"memory.used":70000,"memory.total":81559,"clocks.current.sm":1980,"temperature.gpu":60}}
{"t":1,"gpu":1,"uuid":"GPU-b","v":{"power.draw":100,"utilization.gpu":10,"clocks.current.sm":1980}}
{"t":2,"gpu":0,"uuid":"GPU-a","v":{"power.draw":500,"utilization.gpu":100,"memory.used":71000,"memory.total":81559,"clocks.current.sm":1500,"temperature.gpu":70}}
{"t":2,"gpu":1,"uuid":"GPU-b","v":{"power.draw":120,"utilization.gpu":30,"clocks.current.sm":1980}}
`
	sweeptest.Must(t, os.WriteFile(filepath.Join(dir, "cells", pass, sweep.GPUSamplesFile), []byte(samples), 0o644))
	run, err := Collect(dir, CollectOptions{})
	sweeptest.Must(t, err)
	noted := 0
	for _, c := range run.Cells {
		if c.CellID != pass && c.GPU != nil && c.GPU.Note == "no gpu.jsonl" {
			noted++
		}
		switch {
		case c.CellID == pass:
			g := c.GPU
			if g == nil || g.Samples != 4 || len(g.GPUs) != 2 || g.Note != "" {
				t.Fatalf("%s: %+v", c.Name, g)
			}
			g0 := g.GPUs[0]
			if g0.UUID != "GPU-a" || g0.PowerW.Mean != 400 || g0.PowerW.Max != 500 || g0.SMClockMHz.Min != 1500 || g0.TempC.Max != 70 || g0.MemUsedMiB.Max != 71000 || g0.MemTotalMiB != 81559 {
				t.Errorf("GPU 0: %+v", g0)
			}
		case c.Started != "" && (c.GPU == nil || c.GPU.Note != "no gpu.jsonl"):
			t.Errorf("%s: %+v, want the note that there are no samples", c.Name, c.GPU)
		}
	}
	if noted == 0 {
		t.Error("no cell says it has no samples")
	}
	sweeptest.Must(t, WriteRun(dir, run))
	back, err := ReadRun(dir)
	sweeptest.Must(t, err)
	for i := range run.Cells {
		if !reflect.DeepEqual(run.Cells[i].GPU, back.Cells[i].GPU) {
			t.Errorf("%s: results.json gives %+v, collect %+v", run.Cells[i].Name, back.Cells[i].GPU, run.Cells[i].GPU)
		}
	}

	plain, err := Collect(sweeptest.Copy(t, "mixed"), CollectOptions{})
	sweeptest.Must(t, err)
	for _, c := range plain.Cells {
		if c.GPU != nil {
			t.Errorf("%s: GPU figures without GPU sampling: %+v", c.Name, c.GPU)
		}
	}
}
