package testrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
)

// nativeHarness writes no result.json v1: its own JSON, or log lines.
const nativeHarness = `#!/bin/bash
cell=$1 mode=$2
case $mode in
good) printf '{"tests": {"TC-01": {"status": "passed", "ttft_s": 0.1837, "note": "fine"}, "TC-04": {"status": false, "ttft_s": "0.25"}}}' >"$cell/native.json" ;;
broken) printf '{"tests": {"TC-01": {"status": "passed", ' >"$cell/native.json" ;;
wrongtype) printf '{"tests": {"TC-01": {"status": "maybe", "ttft_s": 1}, "TC-04": {"status": "ok", "ttft_s": 1}}}' >"$cell/native.json" ;;
log-good) printf 'INFO starting\nTC-04 Guard promoted 1.0 s, first correct response 1.4 s, replacement serving 82 s\nTC-04 PASS\nTC-01 PASS\n' ;;
log-bad) printf 'TC-04 replacement serving 8x2 s\nTC-04 PASS\n' ;;
esac
`

// runNative renders and runs a sweep of the stand-in on the local
// executor with the given harness section, then collects it.
func runNative(t *testing.T, harnessExtra string, modes ...string) map[string]CellResult {
	t.Helper()
	tmp := t.TempDir()
	h := filepath.Join(tmp, "harness.sh")
	if err := os.WriteFile(h, []byte(nativeHarness), 0o755); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`version: 1
name: native
scheduler: local
harness:
  command: [%q, "{{.CellDir}}", "{{.Params.mode}}"]
  cases_flag: ""
%s
topologies: {aggregated: {resources: {time: 1h}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01, TC-04], mode: [%s]}
`, h, harnessExtra, strings.Join(modes, ", "))
	s, cells, err := matrix.ParseCells(filepath.Join(tmp, "spec.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "sweep")
	if _, err := render.Render(s, []byte(src), cells, dir, render.Options{SweepID: "native-1"}); err != nil {
		t.Fatal(err)
	}
	l := local.New(local.Config{Dir: dir, Parallel: 2})
	if _, err := scheduler.Submit(context.Background(), dir, l, scheduler.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	run := collectDir(t, dir)
	out := map[string]CellResult{}
	for _, c := range run.Cells {
		out[c.Params["mode"]] = c
	}
	return out
}

func caseOf(c CellResult, id string) result.Case {
	for _, cs := range c.Cases {
		if cs.ID == id {
			return cs
		}
	}
	return result.Case{}
}

// A harness that writes its own JSON: harness.native_result maps it to
// verdicts and metrics; a broken or unmappable file makes the cell
// INVALID saying why, and the native file stays.
func TestNativeResultMapping(t *testing.T) {
	cells := runNative(t, `  native_result:
    file: native.json
    cases:
      "*":
        verdict: "/tests/{case}/status"
        message: "/tests/{case}/note"
        metrics:
          ttft_ms: {pointer: "/tests/{case}/ttft_s", unit: ms, direction: lower, scale: 1000}`, "good", "broken", "wrongtype")
	good := cells["good"]
	if good.Outcome != OK {
		t.Fatalf("good: %s %s", good.Outcome, good.Detail)
	}
	tc1, tc4 := caseOf(good, "TC-01"), caseOf(good, "TC-04")
	if tc1.Verdict != result.Pass || tc1.Message != "fine" || metric(tc1.Metrics, "ttft_ms") != (result.Metric{Name: "ttft_ms", Value: 183.7, Unit: "ms", Direction: "lower"}) {
		t.Errorf("TC-01: %+v", tc1)
	}
	if tc4.Verdict != result.Fail || metric(tc4.Metrics, "ttft_ms").Value != 250 {
		t.Errorf("TC-04: %+v", tc4)
	}
	for mode, want := range map[string]string{
		"broken":    "native result native.json: not JSON: unexpected EOF",
		"wrongtype": `native result native.json: TC-01: verdict at /tests/TC-01/status: "maybe" is not a verdict`,
	} {
		c := cells[mode]
		if c.Outcome != Invalid || !strings.Contains(c.Detail, want) {
			t.Errorf("%s: %s %q, want INVALID %q", mode, c.Outcome, c.Detail, want)
		}
	}
}

// A harness that writes only log lines: the shipped adapter, run by the
// job after the harness, turns them into result.json v1; an adapter that
// fails makes the cell INVALID naming it and its output's tail.
func TestResultAdapter(t *testing.T) {
	adapter, _ := filepath.Abs("../examples/harness/phase1_log_adapter.py")
	cells := runNative(t, fmt.Sprintf("  result_adapter: [python3, %q]", adapter), "log-good", "log-bad")
	good := cells["log-good"]
	if good.Outcome != OK {
		t.Fatalf("log-good: %s %s", good.Outcome, good.Detail)
	}
	tc4 := caseOf(good, "TC-04")
	if tc4.Verdict != result.Pass || metric(tc4.Metrics, "replacement_serving_s").Value != 82 || metric(tc4.Metrics, "guard_promoted_s").Value != 1 {
		t.Errorf("TC-04: %+v", tc4)
	}
	bad := cells["log-bad"]
	want := "phase1_log_adapter.py failed (exit 2): phase1_log_adapter: line 2: replacement_serving_s: '8x2' is not a number"
	if bad.Outcome != Invalid || bad.Class != ClassTest || !strings.Contains(bad.Detail, want) {
		t.Errorf("log-bad: %s %s %q, want INVALID %q", bad.Outcome, bad.Class, bad.Detail, want)
	}
}

// metric is ms's metric NAME (the zero Metric when it has none).
func metric(ms result.Metrics, name string) result.Metric {
	m, _ := ms.Get(name)
	return m
}
