package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// The bare-vLLM probe lane (examples/lanes/vllm-bare-probe.yaml), end to
// end on the test cluster with a stand-in for the vllm CLI that serves
// vLLM's /metrics and writes a real bench serve file, and that refuses the
// flags, datasets and KV connectors the pinned vLLM refuses (from its
// facts, STANDIN_FACTS: standin_flags_test.go): everything but the engine
// is the lane's own (its probe script, harness.result, telemetry, the
// comparison). Only what the test cluster cannot have changes: the runtime
// (none: no GPU images here), the partition, the resources, and VLLM
// naming the stand-in.
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
		"  image: ghcr.io/kvsweep/kvsweep/kvcr-quick-start:main\n": "",
		"  mounts: [/lustre/models:/models:ro]\n":                  "",
		"cluster:\n  partition: gpu\n  account: kvcr\n":            "",
		"    image: " + base + "\n":                                "    env: {set: {STANDIN_HIT: \"0.1\"}}\n",
		"cpus_per_task: 16, mem: 128G":                             "cpus_per_task: 1, mem: 300M",
		"  pass: [HF_TOKEN, HF_HOME]\n":                            "  set: {VLLM: " + standin + ", STANDIN_BENCH: " + bench + ", STANDIN_FACTS: " + facts + "}\n",
		"telemetry: {interval: 5s}":                                "telemetry: {interval: 1s}",
		`TC-01: {require: ["failed == 0", "completed >= 100"]}`:    `TC-01: {require: ["failed == 0", "completed >= 5"]}`,
	} {
		if !strings.Contains(spec, old) {
			t.Fatalf("the lane no longer has %q", old)
		}
		spec = strings.Replace(spec, old, new, 1)
	}
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	t.Cleanup(func() { cancelSweep(t, c, dir) })
	mustKvsweep(t, c, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s")
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		if cs.State != scheduler.StateCompleted {
			t.Fatalf("%s: %s\n%s", cs.Name, cs.State, cellLog(dir, cs))
		}
	}
	mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(tmp, "history.db"))
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range run.Cells {
		tc := caseOf(cell, "TC-01")
		if tc.Verdict != "PASS" || cell.Outcome != testrun.OK {
			t.Errorf("%s: %s %s %q", cell.Name, cell.Outcome, tc.Verdict, tc.Message)
		}
		for _, m := range []string{"ttft_p99_ms", "completed", "prefix_cache_hit_rate"} {
			if _, ok := tc.Metrics.Get(m); !ok {
				t.Errorf("%s: no %s", cell.Name, m)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, sweep.CellsDir, cell.CellID, "bench.json")); err != nil {
			t.Errorf("%s: bench serve wrote no bench.json: %v", cell.Name, err)
		}
	}
	// The probe against the KVCR cells of the same run.
	md := mustKvsweep(t, c, "report", dir, "--baseline-filter", "engine=vllm-bare", "--format", "markdown", "--all")
	// The probe (hit rate 0.1) is the baseline; the KVCR cell (0.5) improves on it.
	if !strings.Contains(md, "| prefix_cache_hit_rate | 0.1      | 0.5 ") || !strings.Contains(md, "ttft_p99_ms") {
		t.Errorf("the comparison with the probe:\n%s", md)
	}
}
