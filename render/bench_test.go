package render

import (
	"fmt"
	"strings"
	"testing"
)

// bigSpec has 2 engines x 5 topologies x 10 geometries x 6 cases (one job
// per case) x 17 repeats = 10,200 cells.
func bigSpec() []byte {
	var geos, names []string
	for i := 0; i < 10; i++ {
		geos = append(geos, fmt.Sprintf("  g%d:\n    flags: {model: Qwen/Qwen3.5-4B, kv-block-size: \"%d\", hybrid-attention-layers: \"8\"}", i, 16*(i+1)))
		names = append(names, fmt.Sprintf("g%d", i))
	}
	var reps []string
	for i := 0; i < 17; i++ {
		reps = append(reps, fmt.Sprint(i))
	}
	return []byte(fmt.Sprintf(`version: 1
name: big
case_grouping: separate
container: {runtime: pyxis, image: "registry.example.com/kvcr:v1", mounts: ["/models:/models:ro"]}
env: {pass: [HF_TOKEN], set: {PYTHONHASHSEED: "0"}}
harness:
  command: [python3, -m, tests.e2e.phase1, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}", --repeat, "{{.Params.repeat}}"]
topologies:
  aggregated: {resources: {gpus_per_node: 2, time: 2h}}
  sidecar: {resources: {gpus_per_node: 2, time: 2h}, args: [--external-services, "{{.CellDir}}/services"], service: [kvcr-service, --socket-dir, "{{.CellDir}}/services"]}
  disagg-2p1d: {resources: {gpus_per_node: 3, time: 3h}, args: [--topology, disagg]}
  disagg-2p1d-shared: {kind: disagg-2p1d, resources: {gpus_per_node: 2, time: 2h}, args: [--topology, disagg]}
  two-node: {resources: {nodes: 2, gpus_per_node: 1, time: 3h}, agent: [agent]}
geometries:
%s
matrix:
  engine: [vllm, sglang]
  topology: [aggregated, sidecar, disagg-2p1d, disagg-2p1d-shared, two-node]
  geometry: [%s]
  case: [TC-01, TC-02, TC-03, TC-04, TC-05, TC-06]
  repeat: [%s]
`, strings.Join(geos, "\n"), strings.Join(names, ", "), strings.Join(reps, ", ")))
}

// BenchmarkPlan10k: decode, expand and plan 10,200 cells.
func BenchmarkPlan10k(b *testing.B) {
	src := bigSpec()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s, cells := load(b, "big.yaml", src)
		if _, err := Plan(s, cells, Options{SweepID: "big"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(10200, "cells/op")
}

// BenchmarkPlanRender10k: the same, then write the sweep directory
// (manifest, 11 array scripts, 10,200 cell directories).
func BenchmarkPlanRender10k(b *testing.B) {
	src := bigSpec()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		s, cells := load(b, "big.yaml", src)
		m, err := Render(s, src, cells, dir, Options{SweepID: "big"})
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Cells) != 10200 {
			b.Fatalf("got %d cells", len(m.Cells))
		}
	}
}
