package testrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/realout"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
)

// A harness that runs a standard benchmark client: the stand-in copies a
// real output file of vLLM's bench serve (../shared/realout) where the
// client would write it. harness.result reads it at collect: the client's
// metrics in the convention's names, PASS for the rules to judge, a rule
// broken makes it INVALID, a run that completed nothing is a FAIL, and a
// file that does not read is INVALID naming where.
func TestClientResult(t *testing.T) {
	tmp := t.TempDir()
	realout := realout.Dir(t)
	h := filepath.Join(tmp, "client.sh")
	script := fmt.Sprintf(`#!/bin/bash
cell=$1 mode=$2
case $mode in
ran) cp %[1]q/vllm-1.json "$cell/bench.json" ;;
slow) cp %[1]q/vllm-5.json "$cell/bench.json" ;;
allfailed) cp %[1]q/vllm-4.json "$cell/bench.json" ;;
broken) printf '{"completed": 8, "mean_ttft_ms": "fast"}' >"$cell/bench.json" ;;
esac
`, realout)
	if err := os.WriteFile(h, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`version: 1
name: client
scheduler: local
harness:
  command: [%q, "{{.CellDir}}", "{{.Params.mode}}"]
  cases_flag: ""
  result: {format: vllm-bench, file: bench.json}
cases:
  TC-01: {require: ["failed == 0", "ttft_p99_ms < 750"]}
topologies: {aggregated: {resources: {time: 1h}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], mode: [ran, slow, allfailed, broken]}
`, h)
	s, cells, err := matrix.ParseCells(filepath.Join(tmp, "spec.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "sweep")
	if _, err := render.Render(s, []byte(src), cells, dir, render.Options{SweepID: "client-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := scheduler.Submit(context.Background(), dir, local.New(local.Config{Dir: dir, Parallel: 2}), scheduler.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	got := map[string]CellResult{}
	for _, c := range collectDir(t, dir).Cells {
		got[c.Params["mode"]] = c
	}
	ran := got["ran"]
	if ran.Outcome != OK {
		t.Fatalf("ran: %s %s", ran.Outcome, ran.Detail)
	}
	tc := caseOf(ran, "TC-01")
	if tc.Verdict != result.Pass || metric(tc.Metrics, "ttft_p99_ms") != (result.Metric{Name: "ttft_p99_ms", Value: 734.4049174101428, Unit: "ms", Direction: "lower"}) {
		t.Errorf("ran: %+v", tc)
	}
	if c := caseOf(got["slow"], "TC-01"); c.Verdict != Invalid || !strings.Contains(c.Message, "ttft_p99_ms") {
		t.Errorf("slow (vllm-5's ttft_p99_ms breaks the rule): %s %q", c.Verdict, c.Message)
	}
	if c := caseOf(got["allfailed"], "TC-01"); c.Verdict != result.Fail || !strings.Contains(c.Message, "completed no request: all 8 failed") {
		t.Errorf("allfailed: %+v (%s)", c, got["allfailed"].Outcome)
	}
	if c := got["broken"]; c.Outcome != Invalid || !strings.Contains(c.Detail, `vllm-bench result: bench.json:1:34: /mean_ttft_ms: expected a number, got the string "fast"`) {
		t.Errorf("broken: %s %q", c.Outcome, c.Detail)
	}
}
