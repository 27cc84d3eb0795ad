package e2e

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// The bare-vLLM probe lane (examples/lanes/vllm-bare-probe.yaml), end to
// end on the test cluster with a stand-in for the vllm CLI that serves
// vLLM 0.20.1's /metrics from a prefix cache of its own (the KVCR arm's
// with a connector's tier behind it), whose bench serve sends the
// dataset's prompts, and that refuses the flags, datasets and KV
// connectors the pinned vLLM refuses (from its facts, STANDIN_FACTS:
// standin_flags_test.go): everything but the engine is the lane's own
// (its probe script, its cold and warm cases, harness.result, telemetry,
// the comparison). Only what the test cluster cannot have changes: the
// runtime (none: no GPU images here), the partition, the resources, the
// prompts' count, and VLLM naming the stand-in. The GPU holds fewer blocks
// than a pass's prompts, so the warm pass finds nothing left on the GPU:
// the bare arm reuses nothing (its warm case is INVALID below the floor)
// and the KVCR arm loads every prompt from its tier.
func TestBareVLLMProbeLane(t *testing.T) {
	c := clusters(t)[0]
	src, err := os.ReadFile("../examples/lanes/vllm-bare-probe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// The lane as shipped renders, and its probe script is clean bash.
	lane := filepath.Join(tmp, "lane.yaml")
	if err := os.WriteFile(lane, src, 0o644); err != nil {
		t.Fatal(err)
	}
	mustKvsweep(t, c, "render", lane, "--out", filepath.Join(tmp, "as-shipped"), "--offline")
	scripts, _ := filepath.Glob(filepath.Join(tmp, "as-shipped", "jobs", "*.sbatch"))
	for _, sc := range scripts {
		if out, err := exec.Command("shellcheck", sc).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", sc, err, out)
		}
	}
	if len(scripts) == 0 {
		t.Error("the lane rendered no job script")
	}
	var doc struct {
		Harness struct {
			Command []string `yaml:"command"`
		} `yaml:"harness"`
	}
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Harness.Command) < 3 {
		t.Fatalf("the lane's harness: %v", err)
	}
	probe := filepath.Join(tmp, "probe.sh")
	if err := os.WriteFile(probe, []byte("#!/bin/bash\n"+doc.Harness.Command[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("shellcheck", probe).CombinedOutput(); err != nil {
		t.Errorf("shellcheck of the lane's probe script: %v\n%s", err, out)
	}

	standin, _ := filepath.Abs(vllmStandin)
	bench, _ := filepath.Abs("../../shared/realout/vllm-1.json")
	facts := writeStandinFacts(t)
	base, _ := pinnedVLLM(t)
	spec := string(src)
	for old, new := range map[string]string{
		"  runtime: pyxis\n": "  runtime: none\n",
		"  image: ghcr.io/kvsweep/kvsweep/kvcr-quick-start:main\n":                           "",
		"  mounts: [/lustre/models:/models:ro]\n":                                            "",
		"cluster:\n  partition: gpu\n  account: kvcr\n":                                      "",
		"    image: " + base + "\n":                                                          "    env: {set: {STANDIN_ARM: bare}}\n",
		"cpus_per_task: 16, mem: 128G":                                                       "cpus_per_task: 1, mem: 300M",
		"  pass: [HF_TOKEN, HF_HOME]\n":                                                      "  set: {VLLM: " + standin + ", STANDIN_BENCH: " + bench + ", STANDIN_FACTS: " + facts + ", STANDIN_GPU_BLOCKS: \"200\", PROBE_PROMPTS: \"6\"}\n",
		"telemetry: {endpoints: [], interval: 5s}":                                           "telemetry: {endpoints: [], interval: 1s}",
		`TC-01: {cache: cold, require: ["failed == 0", "completed >= 100"]}`:                 `TC-01: {cache: cold, require: ["failed == 0", "completed >= 5"]}`,
		`TC-02: {cache: warm, min_reuse: 0.5, require: ["failed == 0", "completed >= 100"]}`: `TC-02: {cache: warm, min_reuse: 0.5, require: ["failed == 0", "completed >= 5"]}`,
	} {
		if !strings.Contains(spec, old) {
			t.Fatalf("the lane no longer has %q", old)
		}
		spec = strings.Replace(spec, old, new, 1)
	}
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	runCompleted(t, c, nil, path, dir)
	run := collectRun(t, c, dir)
	for _, cell := range run.Cells {
		kvcr := cell.Params["engine"] == "vllm"
		cold, warm := caseOf(cell, "TC-01"), caseOf(cell, "TC-02")
		// Cold: reset first (the job's record), nothing reused in its window.
		if cold.Verdict != "PASS" {
			t.Errorf("%s: TC-01 %s %q", cell.Name, cold.Verdict, cold.Message)
		}
		if len(cell.Cache) == 0 || cell.Cache[0].Case != "TC-01" || cell.Cache[0].State != "cold" || !cell.Cache[0].Marked ||
			len(cell.Cache[0].Steps) == 0 || !cell.Cache[0].Steps[0].OK || !strings.Contains(cell.Cache[0].Steps[0].Target, "/reset_prefix_cache") {
			t.Errorf("%s: what the job did before TC-01: %+v", cell.Name, cell.Cache)
		}
		wantFigure(t, cell.Name+" TC-01", cold, "prefix_cache_hit_rate", 0)
		// Warm: the same prompts; the GPU kept none of them.
		wantFigure(t, cell.Name+" TC-02", warm, "prefix_cache_hit_rate", 0)
		if kvcr {
			wantFigure(t, cell.Name+" TC-01", cold, "kv_connector_hit_rate", 0)
			wantFigure(t, cell.Name+" TC-02", warm, "kv_connector_hit_rate", 1)
			if warm.Verdict != "PASS" {
				t.Errorf("%s: TC-02 %s %q, want PASS: the tier served the warm pass", cell.Name, warm.Verdict, warm.Message)
			}
		} else {
			if _, ok := warm.Metrics.Get("kv_connector_hit_rate"); ok {
				t.Errorf("%s: a connector hit rate without a connector: %v", cell.Name, warm.Metrics)
			}
			if warm.Verdict != testrun.Invalid || !strings.Contains(warm.Message, "prefix_cache_hit_rate") {
				t.Errorf("%s: TC-02 %s %q, want INVALID below its reuse floor, naming the figure", cell.Name, warm.Verdict, warm.Message)
			}
		}
		for _, tc := range []result.Case{cold, warm} {
			for _, m := range []string{"ttft_p99_ms", "completed"} {
				if _, ok := tc.Metrics.Get(m); !ok {
					t.Errorf("%s %s: no %s", cell.Name, tc.ID, m)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(dir, sweep.CellsDir, cell.CellID, "bench.jsonl")); err != nil {
			t.Errorf("%s: the probe wrote no bench.jsonl: %v", cell.Name, err)
		}
	}
	// The KVCR arm against the probe, case by case, in the same run.
	md := mustKvsweep(t, c, "report", dir, "--baseline-filter", "engine=vllm-bare", "--format", "markdown", "--all")
	for _, want := range []string{"TC-01", "TC-02", "kv_connector_hit_rate", "prefix_cache_hit_rate", "ttft_p99_ms"} {
		if !strings.Contains(md, want) {
			t.Errorf("the comparison with the probe has no %s:\n%s", want, md)
		}
	}
}

// wantFigure fails unless the case's figure is there and equals want.
func wantFigure(t *testing.T, where string, tc result.Case, name string, want float64) {
	t.Helper()
	m, ok := tc.Metrics.Get(name)
	if !ok || math.Abs(m.Value-want) > 1e-9 {
		t.Errorf("%s: %s %v (reported: %v), want %v", where, name, m.Value, ok, want)
	}
}
