package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/testrun"
	"github.com/kvsweep/kvsweep/upstream"
)

// The SGLang quick-start image (pins engine: sglang, the embedded
// templates/Dockerfile.quick-start-sglang) built with the real buildkitd
// from the same stand-ins as the vLLM one, on a stand-in of SGLang's
// image whose server refuses what SGLang v0.5.11's argparse refuses
// (generated from upstream's facts): the canary loads KVCR's HiCache
// backend as SGLang's dynamic loader does, the image records Dynamo and
// KVCR and no adapter, and SGLang cells run in it under pyxis with the
// SGLang engine's arguments of the shipped examples/phase1.yaml: the
// server stand-in accepts them and loads the backend; the former
// --hicache-storage-backend kvcr is refused as SGLang refuses it.
func TestQuickStartSGLang(t *testing.T) {
	c := clusters(t)[0]
	reg, addr, qsBase := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR"), os.Getenv("KVSWEEP_QS_BASE")
	if reg == "" || addr == "" || qsBase == "" {
		t.Fatal("the registry, buildkitd and the stand-in base are not set up: scripts/buildkit-env.sh install, start and env (the README's test command)")
	}
	qs := quickStartSources(t, "")
	base := imagetest.PushRootfs(t, reg+"/qs/sglang-standin:0.5.11", qsBase, sglangStandin(t))
	pins := filepath.Join(qs.tmp, "sglang.pins.yaml")
	src := fmt.Sprintf(`version: 1
engine: sglang
base: %s
dynamo: {repo: %s/dynamo.git, ref: v0}
kvcr: {path: %s}
%s`, base, qs.git.URL, qs.kvcr, qs.inputs(qs.args))
	if err := os.WriteFile(pins, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustKvsweep(t, c, "image", "build", "--check", "--pins", pins, "--insecure-registry", "--buildkit-addr", addr); !strings.Contains(out, "no findings") {
		t.Errorf("image build --check of the SGLang Dockerfile:\n%s", out)
	}
	ref := reg + "/qs/kvcr-sglang:1"
	out, errs, err := kvsweep(t, c, nil, "image", "build", "--pins", pins, "--push", ref, "--insecure-registry",
		"--buildkit-addr", addr, "--progress", "plain", "--media-types", "docker")
	if err != nil {
		t.Fatalf("building the SGLang Dockerfile: %v\n%s%s", err, out, lastLines(errs, 60))
	}
	for _, want := range []string{"sglang 0.5.11", "hicache backend kvcr.sglang.KVCRStorage"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the canary did not print %q:\n%s", want, lastLines(errs, 40))
		}
	}
	m := regexp.MustCompile(`(?m)^digest (sha256:[0-9a-f]{64})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("image build printed no digest:\n%s", out)
	}
	image := ref + "@" + m[1]
	mustKvsweep(t, c, "image", "verify", image, "--pins", pins, "--insecure-registry")
	var revs *provenance.SourceRevisions
	js := mustKvsweep(t, c, "image", "inspect", image, "--insecure-registry", "--format", "json")
	if revs = inspectRevisions(t, js); revs.Commit("dynamo") != qs.dynamo[0] || revs.Commit("vllm_adapter") != "" {
		t.Errorf("the SGLang image records %s, want dynamo %s and no adapter", revs.Short(), qs.dynamo[0])
	}

	// The shipped spec's SGLang arguments, as the harness hands them to
	// the server.
	shipped, err := os.ReadFile("../examples/phase1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := matrix.Parse("../examples/phase1.yaml", shipped)
	if err != nil {
		t.Fatal(err)
	}
	var sgArgs []string
	for _, v := range spec.Engines["sglang"].Args {
		sgArgs = append(sgArgs, fmt.Sprintf("%q", v.S))
	}
	old := slices.Clone(sgArgs)
	for i, a := range old {
		if a == `"dynamic"` {
			old[i] = `"kvcr"`
		}
	}
	tmp := t.TempDir()
	path := writeSpec(t, tmp, fmt.Sprintf(`version: 1
name: qs-sglang
container: {runtime: pyxis, image: %q}
harness:
  # The Phase 1 harness's part: the engine's words to SGLang's server
  # (here its stand-in, which checks them and loads the storage backend),
  # then the cases.
  command:
    - bash
    - -c
    - |
      set -eu
      dir=$1
      shift
      server=()
      while [ $# -gt 0 ]; do
        case $1 in
        --cases) shift 2 ;;
        --worker-module) shift 2 ;;
        *) server+=("$1"); shift ;;
        esac
      done
      python3 -m sglang.launch_server --model-path m "${server[@]}"
      exec /opt/kvcr/phase1-sim.sh --engine sglang --results-dir "$dir"
    - sglang-harness
    - "{{.CellDir}}"
engines:
  sglang: {args: [%s]}
  sglang-old: {args: [%s]}
topologies: {aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 300M, time: 10m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [sglang, sglang-old], topology: [aggregated], geometry: [g], case: [TC-01]}
`, image, strings.Join(sgArgs, ", "), strings.Join(old, ", ")))
	dir := filepath.Join(tmp, "sweep")
	defer cancelSweep(t, c, dir)
	_, _, _ = kvsweep(t, c, nil, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s", "--insecure-registry")
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		log := cellLog(dir, cs)
		switch {
		case strings.HasPrefix(cs.Name, "sglang-old"):
			if cs.State == scheduler.StateCompleted || !strings.Contains(log, "argument --hicache-storage-backend: invalid choice: 'kvcr'") {
				t.Errorf("%s: %s; want SGLang's refusal of backend kvcr:\n%s", cs.Name, cs.State, log)
			}
		default:
			if cs.State != scheduler.StateCompleted || !strings.Contains(log, "hicache storage backend dynamic: kvcr.sglang.KVCRStorage") {
				t.Errorf("%s: %s; want the shipped arguments accepted and KVCR's backend loaded:\n%s", cs.Name, cs.State, log)
			}
		}
	}
	// The refused cell makes collect exit 1 (HARNESS_FAILED): expected.
	if out, errs, err := kvsweep(t, c, nil, "collect", dir, "--store", filepath.Join(tmp, "history.db")); err == nil || !strings.Contains(out+errs, "1 OK, 1 HARNESS_FAILED") {
		t.Errorf("collect: %v, want 1 OK and the refused cell HARNESS_FAILED:\n%s%s", err, out, errs)
	}
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range run.Cells {
		if strings.HasPrefix(rc.Name, "sglang-aggregated") && (rc.Outcome != testrun.OK || rc.Image.Digest != m[1]) {
			t.Errorf("%s: %s %s, digest %s", rc.Name, rc.Outcome, rc.Detail, rc.Image.Digest)
		}
	}
}

// inspectRevisions reads the source revisions of image inspect --format json.
func inspectRevisions(t *testing.T, js string) *provenance.SourceRevisions {
	t.Helper()
	var in struct {
		Revisions *provenance.SourceRevisions `json:"source_revisions"`
	}
	if err := json.Unmarshal([]byte(js), &in); err != nil || in.Revisions == nil {
		t.Fatalf("image inspect: %v\n%s", err, js)
	}
	return in.Revisions
}

// sglangStandin is a stub sglang over the stand-in base: the package laid
// out as SGLang's (HiCacheStorage where the dynamic loader finds its base
// class) and a launch_server that parses as SGLang v0.5.11's server does,
// for the flags, choices and dynamic-backend keys its facts list
// (upstream/facts/sglang-v0.5.11.yaml), then loads the storage backend and
// exits instead of serving.
func sglangStandin(t *testing.T) map[string]string {
	t.Helper()
	r, err := upstream.For("sglang", "v0.5.11")
	if err != nil {
		t.Fatal(err)
	}
	var flags, bools []string
	alias := regexp.MustCompile(`(?:alias|second name of) (--[a-z0-9-]+)`)
	for _, f := range r.All("server.flag") {
		names := []string{f.Value()}
		for _, m := range alias.FindAllStringSubmatch(f.Note, -1) {
			names = append(names, m[1])
		}
		if strings.Contains(f.Note, "store_true") {
			bools = append(bools, names...)
		} else {
			flags = append(flags, names...)
		}
	}
	backends, _ := r.One("hicache.storage_backend_choices")
	keys := r.Values("hicache.dynamic")
	site := "usr/local/lib/python3.11/dist-packages/"
	return map[string]string{
		site + "sglang/__init__.py":                      "__version__ = \"0.5.11\"\n",
		site + "sglang-0.5.11.dist-info/METADATA":        "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.11\n",
		site + "sglang-0.5.11.dist-info/INSTALLER":       "pip\n",
		site + "sglang-0.5.11.dist-info/RECORD":          "",
		site + "sglang/srt/__init__.py":                  "",
		site + "sglang/srt/mem_cache/__init__.py":        "",
		site + "sglang/srt/mem_cache/hicache_storage.py": "class HiCacheStorage:\n    pass\n",
		site + "sglang/launch_server.py": fmt.Sprintf(`import argparse, importlib, json, sys

from sglang.srt.mem_cache.hicache_storage import HiCacheStorage

VALUED = %s
BOOLS = %s
BACKENDS = %s
DYNAMIC_KEYS = %s

p = argparse.ArgumentParser(prog="launch_server.py")
for f in VALUED:
    if f == "--hicache-storage-backend":
        p.add_argument(f, choices=BACKENDS)
    else:
        p.add_argument(f)
for f in BOOLS:
    p.add_argument(f, action="store_true")
a = p.parse_args()
if a.enable_hierarchical_cache and a.hicache_storage_backend == "dynamic":
    extra = json.loads(a.hicache_storage_backend_extra_config or "{}")
    for k in DYNAMIC_KEYS:
        if k not in extra:
            sys.exit(f"ValueError: the dynamic backend's extra config lacks {k!r}")
    cls = getattr(importlib.import_module(extra["module_path"]), extra["class_name"])
    if not issubclass(cls, HiCacheStorage):
        sys.exit(f"TypeError: {cls} is not a HiCacheStorage")
    cls({"model": a.model_path}, extra)
    print(f"hicache storage backend dynamic: {extra['module_path']}.{extra['class_name']} ({extra['backend_name']})")
elif a.hicache_storage_backend:
    print(f"hicache storage backend {a.hicache_storage_backend}" + ("" if a.enable_hierarchical_cache else " ignored: no --enable-hierarchical-cache"))
`, pyList(flags), pyList(bools), pyList(backends.Values), pyList(keys)),
	}
}

func pyList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
