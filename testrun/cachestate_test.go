package testrun

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// cacheCell is the passing cell of the mixed sweep, copied: its
// directory, the manifest, and its result.json to rewrite.
type cacheCell struct {
	dir, cellDir string
	m            *sweep.Manifest
	result       map[string]any
}

func newCacheCell(t *testing.T) *cacheCell {
	t.Helper()
	dir := sweeptest.Copy(t, "mixed")
	m, err := sweep.ReadManifest(dir)
	sweeptest.Must(t, err)
	c := &cacheCell{dir: dir, m: m}
	for _, cell := range m.Cells {
		if cell.Name == "vllm-aggregated-qwen3.5-4b-sim-pass" {
			c.cellDir = filepath.Join(dir, "cells", cell.ID)
		}
	}
	b, err := os.ReadFile(filepath.Join(c.cellDir, "result.json"))
	sweeptest.Must(t, err)
	sweeptest.Must(t, json.Unmarshal(b, &c.result))
	return c
}

// collect writes TC-01's figures (as telemetry attaches them to the
// case's metrics) and verdict, and case-windows.jsonl (none when
// windows is ""), and collects the sweep under plan; it returns the cell.
func (c *cacheCell) collect(t *testing.T, plan *sweep.CachePlan, verdict string, figures map[string]float64, windows string) CellResult {
	t.Helper()
	tc1 := c.result["cases"].([]any)[0].(map[string]any)
	tc1["verdict"] = verdict
	metrics := map[string]any{"ttft_ms": map[string]any{"value": 188.3, "unit": "ms", "direction": "lower"}}
	for name, v := range figures {
		metrics[name] = map[string]any{"value": v, "unit": "ratio", "direction": "higher"}
	}
	tc1["metrics"] = metrics
	b, err := json.Marshal(c.result)
	sweeptest.Must(t, err)
	sweeptest.Must(t, os.WriteFile(filepath.Join(c.cellDir, "result.json"), b, 0o644))
	path := filepath.Join(c.cellDir, sweep.CaseWindowsFile)
	_ = os.Remove(path)
	if windows != "" {
		sweeptest.Must(t, os.WriteFile(path, []byte(windows), 0o644))
	}
	m := *c.m
	m.Cache = plan
	run, err := Collect(c.dir, CollectOptions{Manifest: &m, Now: sweeptest.Now})
	sweeptest.Must(t, err)
	for _, cr := range run.Cells {
		if cr.Name == "vllm-aggregated-qwen3.5-4b-sim-pass" {
			return cr
		}
	}
	t.Fatal("no passing cell")
	return CellResult{}
}

func cachePlanOf(state string, minReuse float64, reset bool) *sweep.CachePlan {
	cc := sweep.CaseCache{State: state, MinReuse: minReuse}
	if state == sweep.CachePrimed {
		cc.Prime = []string{"python3", "prime.py"}
	}
	return &sweep.CachePlan{Cases: map[string]sweep.CaseCache{"TC-01": cc}, Reset: reset, TierReset: []string{"kvcr-cli", "flush"}, MaxColdHitRate: 0.01}
}

const (
	resetOK = `{"case":"TC-01","event":"start","t":1765000000000,"cache":"cold","steps":[{"what":"reset","target":"http://127.0.0.1:8000/reset_prefix_cache","ok":true,"detail":"200 OK"},{"what":"tier_reset","target":"kvcr-cli flush","ok":true,"detail":"exit 0"}]}
{"case":"TC-01","event":"end","t":1765000030000}
`
	primedOK = `{"case":"TC-01","event":"start","t":1765000000000,"cache":"primed","steps":[{"what":"prime","target":"python3 prime.py","ok":true,"detail":"exit 0"}]}
`
	harnessOnly = `{"case":"TC-01","event":"start","t":1765000000000}
{"case":"TC-01","event":"end","t":1765000030000}
`
)

// Each verdict collect gives a case by its declared cache state, what
// the job did before it and the figures of its window.
func TestCacheVerdicts(t *testing.T) {
	c := newCacheCell(t)
	zero := map[string]float64{PrefixCacheHitRate: 0, ConnectorHitRate: 0}
	tests := []struct {
		name    string
		plan    *sweep.CachePlan
		verdict string
		figures map[string]float64
		windows string
		want    string // INVALID's message, "" for a PASS
	}{
		{"cold, reset, nothing hit", cachePlanOf("cold", 0, true), result.Pass, zero, resetOK, ""},
		{"cold with no case-windows.jsonl", cachePlanOf("cold", 0, true), result.Pass, zero, "",
			"the harness said PASS, but the case is declared cold, and case-windows.jsonl has no start line of it from kvsweep job case (the cell has no such file): nothing reset the caches before it (its message: simulated)"},
		{"cold marked only by the harness", cachePlanOf("cold", 0, true), result.Pass, zero, harnessOnly,
			"the harness said PASS, but the case is declared cold, and case-windows.jsonl has no start line of it from kvsweep job case: nothing reset the caches before it (its message: simulated)"},
		{"cold, reset off, warm cache (vllm #52884)", cachePlanOf("cold", 0, false), result.Pass, map[string]float64{PrefixCacheHitRate: 0.42}, harnessOnly,
			"the harness said PASS, but the case is declared cold, and its prefix_cache_hit_rate is 0.42, above 0.01 (cache.max_cold_hit_rate): it ran on a warm cache (its message: simulated)"},
		{"cold, reset off, cache cold", cachePlanOf("cold", 0, false), result.Pass, map[string]float64{PrefixCacheHitRate: 0.005}, "", ""},
		{"reset endpoint missing", cachePlanOf("cold", 0, true), result.Pass, zero,
			`{"case":"TC-01","event":"start","t":1,"cache":"cold","steps":[{"what":"reset","target":"http://127.0.0.1:8000/reset_prefix_cache","ok":false,"detail":"404 Not Found"}]}`,
			"the harness said PASS, but before the cold case the job's reset of http://127.0.0.1:8000/reset_prefix_cache failed: 404 Not Found (its message: simulated)"},
		{"reset endpoint fails", cachePlanOf("cold", 0, true), result.Pass, zero,
			`{"case":"TC-01","event":"start","t":1,"cache":"cold","steps":[{"what":"reset","target":"http://127.0.0.1:30000/flush_cache","ok":false,"detail":"500 Internal Server Error"}]}`,
			"the harness said PASS, but before the cold case the job's reset of http://127.0.0.1:30000/flush_cache failed: 500 Internal Server Error (its message: simulated)"},
		{"tier flush fails", cachePlanOf("cold", 0, true), result.Pass, zero,
			`{"case":"TC-01","event":"start","t":1,"cache":"cold","steps":[{"what":"reset","target":"http://127.0.0.1:8000/reset_prefix_cache","ok":true},{"what":"tier_reset","target":"kvcr-cli flush","ok":false,"detail":"exit 1: connection refused"}]}`,
			"the harness said PASS, but before the cold case the job's tier_reset of kvcr-cli flush failed: exit 1: connection refused (its message: simulated)"},
		{"job error", cachePlanOf("cold", 0, true), result.Pass, zero,
			`{"case":"TC-01","event":"start","t":1,"cache":"cold","steps":[],"error":"no engine endpoint to reset"}`,
			"the harness said PASS, but before the cold case the job failed to set the caches: no engine endpoint to reset (its message: simulated)"},
		// The spec declares nothing of TC-01 (another case is cold): what
		// the job said of it is kept, and never judged.
		{"undeclared, the job's error recorded only", &sweep.CachePlan{Cases: map[string]sweep.CaseCache{"TC-09": {State: "cold"}}, Reset: true, MaxColdHitRate: 0.01}, result.Pass, nil,
			`{"case":"TC-01","event":"start","t":1,"cache":"","steps":[],"error":"the cache state of TC-01 is unknown: the manifest could not be read"}`, ""},
		{"cold, connector hits", cachePlanOf("cold", 0, true), result.Pass, map[string]float64{PrefixCacheHitRate: 0, ConnectorHitRate: 0.2}, resetOK,
			"the harness said PASS, but the case is declared cold, and its kv_connector_hit_rate is 0.2, above 0.01 (cache.max_cold_hit_rate): it ran on a warm cache (its message: simulated)"},
		{"cold, nothing measured", cachePlanOf("cold", 0, true), result.Pass, nil, resetOK,
			"the harness said PASS, but the case is declared cold and neither prefix_cache_hit_rate nor kv_connector_hit_rate was measured in its window: nothing shows the cache was cold (its message: simulated)"},
		// The GPU served 0.9 and the connector 0.3 of the rest: 0.93 reused.
		{"warm above its floor, local and connector together", cachePlanOf("warm", 0.5, true), result.Pass, map[string]float64{PrefixCacheHitRate: 0.9, ConnectorHitRate: 0.3}, "", ""},
		// 0.2 + 0.8 x 0.25 = 0.4.
		{"warm below its floor, local and connector together", cachePlanOf("warm", 0.5, true), result.Pass, map[string]float64{PrefixCacheHitRate: 0.2, ConnectorHitRate: 0.25}, "",
			"the harness said PASS, but the case is declared warm with min_reuse 0.5, and its reuse (prefix_cache_hit_rate 0.2 with kv_connector_hit_rate 0.25 of the rest) is 0.4 (its message: simulated)"},
		{"warm below its floor, by the connector", cachePlanOf("warm", 0.5, true), result.Pass, map[string]float64{ConnectorHitRate: 0.3}, "",
			"the harness said PASS, but the case is declared warm with min_reuse 0.5, and its kv_connector_hit_rate is 0.3 (its message: simulated)"},
		{"warm above its floor, GPU-local only", cachePlanOf("warm", 0.5, true), result.Pass, map[string]float64{PrefixCacheHitRate: 0.6}, "", ""},
		{"warm floor, nothing measured", cachePlanOf("warm", 0.5, true), result.Pass, nil, "",
			"the harness said PASS, but the case is declared warm with min_reuse 0.5 and neither kv_connector_hit_rate nor prefix_cache_hit_rate was measured in its window (its message: simulated)"},
		{"warm with no floor, nothing measured", cachePlanOf("warm", 0, true), result.Pass, nil, "", ""},
		{"primed above its floor", cachePlanOf("primed", 0.5, true), result.Pass, map[string]float64{ConnectorHitRate: 0.7}, primedOK, ""},
		{"primed, never primed", cachePlanOf("primed", 0.5, true), result.Pass, map[string]float64{ConnectorHitRate: 0.7}, harnessOnly,
			"the harness said PASS, but the case is declared primed, and case-windows.jsonl has no start line of it from kvsweep job case: nothing ran its priming step (its message: simulated)"},
		{"a FAIL stays a FAIL", cachePlanOf("cold", 0, true), result.Fail, nil, "", "simulated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr := c.collect(t, tc.plan, tc.verdict, tc.figures, tc.windows)
			cs := cr.Cases[0]
			wantVerdict := Invalid
			switch {
			case tc.want == "":
				wantVerdict = result.Pass
			case tc.verdict != result.Pass:
				wantVerdict = tc.verdict
			}
			if cs.ID != "TC-01" || cs.Verdict != wantVerdict || (tc.want != "" && cs.Message != tc.want) {
				t.Errorf("%s %s %q\nwant %s %q", cs.ID, cs.Verdict, cs.Message, wantVerdict, tc.want)
			}
			wantState := cmp.Or(tc.plan.Cases["TC-01"].State, sweep.CacheWarm)
			if len(cr.Cache) != 1 || cr.Cache[0].Case != "TC-01" || cr.Cache[0].State != wantState {
				t.Errorf("cache record %+v", cr.Cache)
			}
			if wantClass := map[bool]string{true: "", false: ClassTest}[wantVerdict == result.Pass]; cr.Class != wantClass {
				t.Errorf("class %q, want %q", cr.Class, wantClass)
			}
		})
	}
}

// What the job did is recorded with the cell, the lines that are not
// start lines of its cases skipped; without a cache plan nothing is
// judged or recorded.
func TestCacheRecordAndHostileLines(t *testing.T) {
	c := newCacheCell(t)
	long := strings.Repeat("é", 400)
	windows := strings.Join([]string{
		`not json`,
		`{"case":"TC-01","event":"start","cache":7}`,
		`{"case":"TC-01","event":"start","cache":"cold","steps":"reset"}`,
		`{"case":"TC-99","event":"start","cache":"cold","steps":[]}`,
		`[1,2,3]`,
		`{"case":"TC-01","event":"end","cache":"cold"}`,
		strings.Repeat("{", 100000),
		`{"case":"TC-01","event":"start","t":1,"cache":"cold","steps":[{"what":"reset","target":"http://h:8000/reset_prefix_cache","ok":true,"detail":"` + long + `\n200"}]}`,
	}, "\n")
	cr := c.collect(t, cachePlanOf("cold", 0, true), result.Pass, map[string]float64{PrefixCacheHitRate: 0}, windows)
	if cr.Cases[0].Verdict != result.Pass {
		t.Fatalf("TC-01 %s: %s", cr.Cases[0].Verdict, cr.Cases[0].Message)
	}
	got := cr.Cache
	if len(got) != 1 || !got[0].Marked || len(got[0].Steps) != 1 || got[0].Steps[0].Target != "http://h:8000/reset_prefix_cache" || !got[0].Steps[0].OK {
		t.Fatalf("cache record %+v", got)
	}
	if d := got[0].Steps[0].Detail; len(d) > maxStepText+3 || strings.Contains(d, "\n") || !strings.HasSuffix(d, "...") {
		t.Errorf("detail not bounded to one line of %d bytes: %d bytes %q", maxStepText, len(d), d)
	}
	// Too large a file marks nothing, and says so.
	big := strings.Repeat(" ", MaxCaseWindowsSize+1)
	cr = c.collect(t, cachePlanOf("cold", 0, true), result.Pass, map[string]float64{PrefixCacheHitRate: 0}, big)
	if cs := cr.Cases[0]; cs.Verdict != Invalid || !strings.Contains(cs.Message, "(it could not be read: ") {
		t.Errorf("oversized case-windows.jsonl: %s %q", cs.Verdict, cs.Message)
	}
	// No plan: the spec declares no cache state.
	cr = c.collect(t, nil, result.Pass, nil, resetOK)
	if cr.Cases[0].Verdict != result.Pass || cr.Cache != nil {
		t.Errorf("without a plan: %s, cache %+v", cr.Cases[0].Verdict, cr.Cache)
	}
	// The record goes through results.json and back.
	cr = c.collect(t, cachePlanOf("cold", 0, true), result.Pass, map[string]float64{PrefixCacheHitRate: 0}, resetOK)
	b, err := appendCell(nil, &cr)
	sweeptest.Must(t, err)
	back, ok := decodeCell(b, &result.Scratch{})
	if !ok || len(back.Cache) != 1 || len(back.Cache[0].Steps) != 2 || back.Cache[0].Steps[1].What != "tier_reset" {
		t.Errorf("round trip (%v): %+v\n%s", ok, back.Cache, b)
	}
}
