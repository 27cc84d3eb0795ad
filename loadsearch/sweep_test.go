package loadsearch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { scheduler.Register("local", local.Open) }

// The whole search on the local executor (what a lite kvsweep runs): each
// round one sweep of the spec, the load and repeat as cell parameters,
// the stand-in server's knee found, the table printed; started again
// once done, it probes nothing more.
func TestMainLocal(t *testing.T) {
	harness, err := filepath.Abs("../e2e/testdata/knee-harness.sh")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	spec := filepath.Join(tmp, "spec.yaml")
	src := `version: 1
name: knee
scheduler: local
container: {runtime: none}
harness:
  command: [` + harness + `, "{{.CellDir}}", "{{.Params.rate}}", "{{.Params.repeat}}", "9.5", ` + filepath.Join(tmp, "runs.log") + `, "0"]
  cases_flag: ""
search: {min: 1, max: 16, step: 1, repeats: 2, slo: {ttft_p99_ms: 500, itl_p99_ms: 50}}
topologies: {aggregated: {resources: {gpus_per_node: 1, cpus_per_task: 1, mem: 100M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (*frontier.Frontier, string) {
		var out, errs bytes.Buffer
		l := &lane.Lane{Stdout: &out, Stderr: &errs, Submit: lane.SubmitOptions{Sched: &scheduler.Config{}, Store: filepath.Join(tmp, "h.db")}}
		f, err := Main(context.Background(), l, []string{spec}, Options{Out: filepath.Join(tmp, "s"), Interval: 100 * time.Millisecond, Label: "kvcr"})
		if err != nil {
			t.Fatalf("%v\n%s%s", err, out.String(), errs.String())
		}
		return f, out.String()
	}
	f, out := run()
	c := f.Cells[0]
	if c.Point == nil || c.Point.Load != 9 || c.Name != "vllm-aggregated-g" || f.Label != "kvcr" {
		t.Fatalf("cell %+v, label %q; want the point 9 req/s:\n%s", c, f.Label, out)
	}
	if !strings.Contains(out, "vllm-aggregated-g ("+c.ID+") | 9 req/s") {
		t.Errorf("the table lacks the point:\n%s", out)
	}
	rep := c.Probes[0].Repeats[1]
	if rep.Run != "round-01" || rep.Verdict != "PASS" || rep.Figures[frontier.ITLP99] == 0 || c.Probes[0].Stats[frontier.TTFTP99].N != 2 {
		t.Errorf("first probe %+v", c.Probes[0])
	}
	before, _ := os.ReadFile(filepath.Join(tmp, "runs.log"))
	again, _ := run()
	after, _ := os.ReadFile(filepath.Join(tmp, "runs.log"))
	if len(after) != len(before) || len(again.Cells[0].Probes) != len(c.Probes) {
		t.Errorf("started again once done, it ran %d more bytes of log, %d probes (had %d)", len(after)-len(before), len(again.Cells[0].Probes), len(c.Probes))
	}
}

// A collected cell as a repeat: infra failures have no figures; a figure
// is the worst over the cases; a failed case fails the repeat.
func TestRepeat(t *testing.T) {
	m := func(name string, v float64, dir string) result.Metric {
		return result.Metric{Name: name, Value: v, Direction: dir}
	}
	c := testrun.CellResult{CellID: "x", Outcome: testrun.OK, Cases: []result.Case{
		{ID: "TC-01", Verdict: "PASS", Metrics: result.Metrics{m("ttft_p99_ms", 300, "lower"), m("throughput_req_s", 9, "higher")}},
		{ID: "TC-02", Verdict: "FAIL", Metrics: result.Metrics{m("ttft_p99_ms", 450, "lower"), m("throughput_req_s", 7, "higher")}},
	}}
	r := Repeat(c)
	if r.Verdict != "FAIL" || r.Figures["ttft_p99_ms"] != 450 || r.Figures["throughput_req_s"] != 7 {
		t.Errorf("repeat %+v", r)
	}
	c.Class, c.Outcome = testrun.ClassInfra, testrun.Missing
	if r := Repeat(c); r.Verdict != Infra || len(r.Figures) != 0 {
		t.Errorf("an infra failure: %+v", r)
	}
	for in, want := range map[string]float64{"00:01:30": 90, "1-00:00:10": 86410, "05:07": 307, "": 42, "n/a": 42} {
		if got := seconds(in, 42*time.Second); got != want {
			t.Errorf("seconds(%q) = %g, want %g", in, got, want)
		}
	}
}

// A round of a large matrix is built from its probes alone: 1,000 cells
// each probed at its own load, twice, is 2,000 cells, though the matrix
// times the round's loads times the repeats (2,000,000) is past
// matrix.MaxCombinations; each at its load and repeat, as the harness
// sees it.
func TestRoundCellsLarge(t *testing.T) {
	tmp := t.TempDir()
	var knees []string
	for i := range 1000 {
		knees = append(knees, fmt.Sprintf("%q", strconv.Itoa(i)))
	}
	src := `version: 1
name: big
scheduler: local
container: {runtime: none}
harness:
  command: [./bench.sh, "{{.CellDir}}", "--rate={{.Params.rate}}", "--seed={{.Params.repeat}}"]
  cases_flag: ""
search: {min: 1, max: 2000, step: 1, repeats: 2, slo: {ttft_p99_ms: 500}}
topologies: {aggregated: {resources: {gpus_per_node: 1, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], knee: [` + strings.Join(knees, ", ") + `]}
`
	path := filepath.Join(tmp, "spec.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, base, _, err := matrix.LoadCells(path)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []Request
	load := map[string]float64{}
	for i, c := range CellsOf(spec, base) {
		reqs = append(reqs, Request{Cell: c.ID, Load: float64(i + 1), Repeats: 2})
		load[c.ID] = float64(i + 1)
	}
	sp := &SweepProber{Spec: path}
	cells, err := sp.cells(reqs)(spec, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2000 {
		t.Fatalf("%d cells, want 2000", len(cells))
	}
	seen := map[string]bool{}
	for _, c := range cells {
		l := load[BaseID(c.Params, c.Cases, "rate")]
		want := "--rate=" + matrix.FormatLoad(l)
		if l == 0 || c.Params["rate"] != matrix.FormatLoad(l) || !slices.Contains(c.Argv, want) || !slices.Contains(c.Argv, "--seed="+c.Params["repeat"]) {
			t.Fatalf("cell %s: params %v, argv %q; want its probe's load %g", c.Name, c.Params, c.Argv, l)
		}
		if c.ID != matrix.CellID(c.Params, c.Cases) || seen[c.ID] {
			t.Fatalf("cell %s: id %s, not its parameters' or twice", c.Name, c.ID)
		}
		seen[c.ID] = true
	}
}
