package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// A cold case after a warm one, on the test cluster, against a stand-in
// vLLM server whose prefix cache persists across cases unless
// /reset_prefix_cache is called (vllm-project/vllm #52884): the harness
// marks each case with kvsweep job case and sends the same prompts in
// both. With cache.reset false nothing resets the cache and the cold
// case's window hits (INVALID, naming the figure); with the reset (the
// default) it is PASS; a reset endpoint that answers 500 makes it
// INVALID. The warm case is PASS each time.
func TestCacheStateColdAfterWarm(t *testing.T) {
	c := clusters(t)[0]
	harness, _ := filepath.Abs("testdata/cache-harness.sh")
	for _, tc := range []struct {
		name, reset, mode, verdict, says string
		stepOK                           bool
	}{
		{"noreset", "false", "ok", testrun.Invalid, "hit_rate", false},
		{"reset", "true", "ok", "PASS", "", true},
		{"reset500", "true", "fail-reset", testrun.Invalid, "500", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			port := freePort(t)
			spec := fmt.Sprintf(`version: 1
name: cachestate
container: {runtime: none}
harness:
  command: [%q, "{{.CellDir}}", "%d", %q]
  cases_flag: ""
telemetry: {endpoints: ["http://127.0.0.1:%d/metrics"], interval: 1s}
cache: {reset: %s}
cases:
  TC-01: {cache: warm}
  TC-02: {cache: cold}
topologies: {aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 300M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01, TC-02]}
`, harness, port, tc.mode, port, tc.reset)
			path := writeSpec(t, tmp, spec)
			dir := filepath.Join(tmp, "sweep")
			cells := runCompleted(t, c, nil, path, dir, "--sweep-id", fmt.Sprintf("cache-%s-%d", tc.name, time.Now().UnixNano()%1e9))
			if len(cells) != 1 {
				t.Fatalf("cells %+v", cells)
			}
			checkWindows(t, filepath.Join(dir, sweep.CellsDir, cells[0].ID), tc.reset == "true", tc.stepOK)
			run := collectRun(t, c, dir)
			warm, cold := caseOf(run.Cells[0], "TC-01"), caseOf(run.Cells[0], "TC-02")
			hit := func(c result.Case) string {
				m, ok := c.Metrics.Get("prefix_cache_hit_rate")
				return fmt.Sprintf("%v (measured %v)", m.Value, ok)
			}
			t.Logf("warm: %s, prefix_cache_hit_rate %s; cold: %s %q, prefix_cache_hit_rate %s", warm.Verdict, hit(warm), cold.Verdict, cold.Message, hit(cold))
			if warm.Verdict != "PASS" {
				t.Errorf("the warm case: %s %q", warm.Verdict, warm.Message)
			}
			if cold.Verdict != tc.verdict || !strings.Contains(cold.Message, tc.says) {
				t.Errorf("the cold case: %s %q, want %s saying %q; metrics %v", cold.Verdict, cold.Message, tc.verdict, tc.says, cold.Metrics)
			}
		})
	}
}

// checkWindows holds the cell's case-windows.jsonl to what kvsweep job
// case writes: start and end of each case in order, the cold case's start
// with its reset step (none when the spec turns resets off).
func checkWindows(t *testing.T, cellDir string, reset, stepOK bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cellDir, sweep.CaseWindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		What, Target, Detail string
		OK                   bool
	}
	var lines []struct {
		Case, Event, Cache, Error string
		T                         int64
		Steps                     []step
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		lines = append(lines, struct {
			Case, Event, Cache, Error string
			T                         int64
			Steps                     []step
		}{})
		if err := json.Unmarshal([]byte(l), &lines[len(lines)-1]); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	want := []string{"TC-01 start warm", "TC-01 end ", "TC-02 start cold", "TC-02 end "}
	if len(lines) != len(want) {
		t.Fatalf("case-windows.jsonl:\n%s", b)
	}
	for i, l := range lines {
		if got := l.Case + " " + l.Event + " " + l.Cache; got != want[i] || (i > 0 && l.T < lines[i-1].T) {
			t.Errorf("line %d: %q at %d, want %q in order\n%s", i+1, got, l.T, want[i], b)
		}
	}
	cold := lines[2]
	switch {
	case !reset && len(cold.Steps) != 0:
		t.Errorf("cache.reset false, yet steps: %+v", cold.Steps)
	case reset && (len(cold.Steps) != 1 || cold.Steps[0].OK != stepOK || !strings.HasSuffix(cold.Steps[0].Target, "/reset_prefix_cache")):
		t.Errorf("the cold case's reset: %+v", cold.Steps)
	case reset && !stepOK && !strings.Contains(cold.Error, "500"):
		t.Errorf("a reset answered 500, yet the line's error is %q", cold.Error)
	}
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
