package upstream_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/upstream"
)

// pins is the part of a pins file the conformance test reads.
type pins struct {
	Base   string `yaml:"base"`
	Dynamo struct {
		Ref string `yaml:"ref"`
	} `yaml:"dynamo"`
	BuildArgs map[string]string `yaml:"build_args"`
}

// checker is the facts of the releases examples/pins.yaml names: the
// base image's vLLM, Dynamo, and the SGLang that Dynamo release ships.
func checker(t *testing.T) (*upstream.Checker, pins) {
	t.Helper()
	b, err := os.ReadFile("../examples/pins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p pins
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	tag := p.Base[strings.LastIndex(p.Base[:strings.Index(p.Base+"@", "@")], ":")+1 : strings.Index(p.Base+"@", "@")]
	vllm, err := upstream.For("vllm", tag)
	if err != nil {
		t.Fatalf("examples/pins.yaml: base %s: %v", p.Base, err)
	}
	dyn, err := upstream.For("dynamo", p.Dynamo.Ref)
	if err != nil {
		t.Fatalf("examples/pins.yaml: dynamo.ref %s: %v", p.Dynamo.Ref, err)
	}
	sg, _ := dyn.One("engine.sglang")
	sglang, err := upstream.For("sglang", sg.Value())
	if err != nil {
		t.Fatalf("the SGLang Dynamo %s ships (%s): %v", dyn.Release, dyn.Cite(sg), err)
	}
	return &upstream.Checker{VLLM: vllm, Dynamo: dyn, SGLang: sglang}, p
}

// The pins are one compatibility set: the base image is the vLLM the
// Dynamo release pins, by the digest the facts record; the Rust toolchain
// is the one Dynamo's own build uses; every download's version and
// SHA-256 is a fact.
func TestPinsAreACompatibilitySet(t *testing.T) {
	c, p := checker(t)
	if f, _ := c.Dynamo.One("engine.vllm"); "v"+strings.TrimPrefix(f.Value(), "v") != c.VLLM.Release {
		t.Errorf("examples/pins.yaml: base is vLLM %s, but Dynamo %s pins vLLM %s [%s]", c.VLLM.Release, c.Dynamo.Release, f.Value(), c.Dynamo.Cite(f))
	}
	if f, ok := c.VLLM.One("image.digest"); !ok || !strings.HasSuffix(p.Base, "@"+f.Value()) {
		t.Errorf("examples/pins.yaml: base %s is not the digest the facts record (%s) [%s]", p.Base, f.Value(), c.VLLM.Cite(f))
	}
	if f, ok := c.Dynamo.One("build.rust_container"); !ok || p.BuildArgs["RUST_VERSION"] != f.Value() {
		t.Errorf("examples/pins.yaml: RUST_VERSION %q, Dynamo %s builds with %q [%s]", p.BuildArgs["RUST_VERSION"], c.Dynamo.Release, f.Value(), c.Dynamo.Cite(f))
	}
	in, err := upstream.For("build-inputs", "2026-12")
	if err != nil {
		t.Fatal(err)
	}
	for arg, key := range map[string]string{
		"PROTOC_VERSION": "protoc.version", "PROTOC_SHA256": "protoc.sha256.linux-x86_64",
		"NATS_VERSION": "nats.version", "NATS_SHA256": "nats.sha256.linux-amd64",
		"RUSTUP_VERSION": "rustup.version", "RUSTUP_SHA256": "rustup.sha256.x86_64-unknown-linux-gnu",
		"ETCD_VERSION": "etcd.version", "ETCD_SHA256": "etcd.sha256.linux-amd64",
	} {
		f, ok := in.One(key)
		if !ok {
			t.Errorf("%s: no fact %s", in.File, key)
			continue
		}
		if strings.TrimPrefix(p.BuildArgs[arg], "v") != strings.TrimPrefix(f.Value(), "v") {
			t.Errorf("examples/pins.yaml: %s %q, the fact says %q [%s]", arg, p.BuildArgs[arg], f.Value(), in.Cite(f))
		}
	}
}

// shipped are the specs and lanes kvsweep ships.
func shipped(t *testing.T) []string {
	var out []string
	for _, g := range []string{"../examples/*.yaml", "../examples/lanes/*.yaml"} {
		m, _ := filepath.Glob(g)
		for _, f := range m {
			if !strings.HasSuffix(f, "pins.yaml") {
				out = append(out, f)
			}
		}
	}
	if len(out) < 4 {
		t.Fatalf("found %d shipped specs", len(out))
	}
	return out
}

// runsDynamo reports whether a harness is the Phase 1 harness, which
// starts Dynamo's frontend and workers.
func runsDynamo(words []matrix.Value) bool {
	return slices.ContainsFunc(words, func(v matrix.Value) bool { return strings.HasPrefix(v.S, "tests.e2e.phase1") })
}

func words(vs []matrix.Value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.S
	}
	return out
}

// conform is every check over one spec: its scripts under every runtime,
// its services, its engines' flags, its models.
func conform(t *testing.T, c *upstream.Checker, path string, src []byte) []upstream.Violation {
	t.Helper()
	var out []upstream.Violation
	for _, rt := range []string{"pyxis", "enroot", "docker", "apptainer"} {
		s, cells, err := matrix.ParseCells(path, src)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		s.Container.Runtime = rt
		if s.Container.Image == "" {
			s.Container.Image = "registry.example.com/kvcr/quick-start:x"
		}
		if s.Container.User != "" && rt != "docker" {
			s.Container.User = ""
		}
		if s.Scheduler == "k8s" {
			s.Scheduler = "slurm"
		}
		dir := filepath.Join(t.TempDir(), "sweep")
		m, err := render.Render(s, src, cells, dir, render.Options{Binary: "/bin/true", SweepID: "conform-1"})
		if err != nil {
			t.Fatalf("%s under %s: %v", path, rt, err)
		}
		for _, j := range m.Jobs {
			b, err := os.ReadFile(filepath.Join(dir, j.Script))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c.Launch(path+" "+j.Name, rt, string(b))...)
		}
		if rt != "pyxis" {
			continue
		}
		// What does not depend on the runtime, once.
		for _, name := range s.EngineOrder {
			e := s.Engines[name]
			h := s.Harness.Command
			if e.Harness != nil {
				h = e.Harness
			}
			if runsDynamo(h) {
				svc := s.Services
				if e.Services != nil {
					svc = *e.Services
				}
				out = append(out, c.Services(path+" engines."+name, svc)...)
			}
			out = append(out, c.VLLMScript(path+" engines."+name, strings.Join(words(h), "\n"))...)
			args := words(e.Args)
			for i, w := range args {
				if w == "--kv-transfer-config" && i+1 < len(args) {
					out = append(out, c.KVTransferConfig(path+" engines."+name, args[i+1])...)
				}
			}
			if strings.HasPrefix(name, "sglang") {
				out = append(out, c.SGLangArgs(path+" engines."+name, args)...)
			}
		}
		for _, k := range s.Env.SetKeys {
			out = append(out, c.Env(path+" env.set", k)...)
		}
		for _, name := range s.EngineOrder {
			for _, k := range s.Engines[name].Env.SetKeys {
				out = append(out, c.Env(path+" engines."+name+".env.set", k)...)
			}
		}
		if len(s.Engines) == 0 && runsDynamo(s.Harness.Command) {
			out = append(out, c.Services(path, s.Services)...)
		}
		for _, g := range s.GeometryOrder {
			model := s.Geometries[g].Flags["model"]
			if model == "" {
				continue
			}
			engines := []*upstream.Release{c.VLLM}
			if _, ok := s.Engines["sglang"]; ok {
				engines = append(engines, c.SGLang)
			}
			out = append(out, c.Model(path+" geometries."+g, model, engines...)...)
		}
	}
	return out
}

// Everything kvsweep ships conforms to the pinned releases: every spec and
// lane under every runtime, and the quick-start Dockerfile.
func TestShippedConform(t *testing.T) {
	c, _ := checker(t)
	for _, path := range shipped(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range conform(t, c, path, src) {
			t.Error(v)
		}
	}
	df, err := os.ReadFile("../templates/Dockerfile.quick-start-vllm")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range c.Dockerfile("templates/Dockerfile.quick-start-vllm", string(df)) {
		t.Error(v)
	}
	// The SGLang image: Dynamo's needs; its base (SGLang's image) has no
	// ENTRYPOINT of its own to reset.
	sg, err := os.ReadFile("../templates/Dockerfile.quick-start-sglang")
	if err != nil {
		t.Fatal(err)
	}
	sgc := &upstream.Checker{Dynamo: c.Dynamo, SGLang: c.SGLang}
	for _, v := range sgc.Dockerfile("templates/Dockerfile.quick-start-sglang", string(sg)) {
		t.Error(v)
	}
	if f, ok := c.SGLang.One("image.entrypoint"); ok && len(f.Values) > 0 {
		t.Errorf("SGLang %s's image has an ENTRYPOINT %q: the SGLang Dockerfile must reset it [%s]", c.SGLang.Release, f.Values, c.SGLang.Cite(f))
	}
}

// A planted violation fails, naming the fact's source.
func TestPlantedViolations(t *testing.T) {
	c, _ := checker(t)
	df, err := os.ReadFile("../templates/Dockerfile.quick-start-vllm")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := os.ReadFile("../examples/lanes/vllm-bare-probe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	phase1, err := os.ReadFile("../examples/phase1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mustFind := func(t *testing.T, vs []upstream.Violation, what, fact string) {
		t.Helper()
		for _, v := range vs {
			if strings.Contains(v.What, what) && strings.Contains(v.Fact, fact) {
				return
			}
		}
		t.Errorf("no violation %q citing %q among %v", what, fact, vs)
	}
	t.Run("a flag the pinned vLLM lacks", func(t *testing.T) {
		src := strings.Replace(string(probe), "--prefix-repetition-output-len 128", "--prefix-repetition-output-len 128 --prefix-cache-salt x", 1)
		mustFind(t, conform(t, c, "vllm-bare-probe.yaml", []byte(src)), "no flag --prefix-cache-salt", "vllm-v0.20.1.yaml")
	})
	t.Run("a dataset the pinned vLLM lacks", func(t *testing.T) {
		src := strings.Replace(string(probe), "--dataset-name prefix_repetition", "--dataset-name shared-prefix", 1)
		mustFind(t, conform(t, c, "vllm-bare-probe.yaml", []byte(src)), "--dataset-name shared-prefix", "datasets.py")
	})
	t.Run("DYN_DISCOVERY", func(t *testing.T) {
		src := strings.Replace(string(df), "ENV PYTHONHASHSEED=0", "ENV DYN_DISCOVERY=file PYTHONHASHSEED=0", 1)
		mustFind(t, c.Dockerfile("Dockerfile", src), "ENV DYN_DISCOVERY:", "dynamo-v1.2.0.yaml")
	})
	t.Run("no ENTRYPOINT reset", func(t *testing.T) {
		src := strings.Replace(string(df), "ENTRYPOINT []", "", 1)
		mustFind(t, c.Dockerfile("Dockerfile", src), "does not reset the base image's ENTRYPOINT", "docker/Dockerfile@132765e3560")
	})
	t.Run("no protoc", func(t *testing.T) {
		src := strings.ReplaceAll(string(df), "PROTOC_SHA256", "PROTOC_SUM")
		mustFind(t, c.Dockerfile("Dockerfile", src), "runs protoc", "lib/llm/build.rs")
	})
	t.Run("a canary that does not ask vLLM's factory", func(t *testing.T) {
		src := strings.Replace(string(df), "KVConnectorFactory.get_connector_class", "print", 1)
		mustFind(t, c.Dockerfile("Dockerfile", src), "through vLLM's own factory", "factory.py")
	})
	t.Run("a variable the engine does not read", func(t *testing.T) {
		src := strings.Replace(string(phase1), "SGLANG_ENABLE_DETERMINISTIC_INFERENCE", "SGLANG_DETERMINISTIC", 1)
		mustFind(t, conform(t, c, "phase1.yaml", []byte(src)), "env SGLANG_DETERMINISTIC: sglang v0.5.11 reads no such variable", "sglang-v0.5.11.yaml")
	})
	t.Run("a missing --entrypoint", func(t *testing.T) {
		script := "launch() {\n\tdocker run --rm --network host \\\n\t\t-- \"$IMAGE\" \"$@\"\n}\n"
		mustFind(t, c.Launch("job.sbatch", "docker", script), "docker run without --entrypoint", "docker/Dockerfile")
	})
	t.Run("pyxis without --no-container-entrypoint", func(t *testing.T) {
		script := "srun --overlap --container-image=\"$IMAGE\" \\\n\t\"$@\"\n"
		mustFind(t, c.Launch("job.sbatch", "pyxis", script), "without --no-container-entrypoint", "docker/Dockerfile")
	})
	t.Run("no NATS for Dynamo", func(t *testing.T) {
		src := strings.Replace(string(phase1), "services: [etcd, nats]", "services: [etcd]", 1)
		mustFind(t, conform(t, c, "phase1.yaml", []byte(src)), "need nats", "runtime_args.py")
	})
	t.Run("an unresolvable connector", func(t *testing.T) {
		mustFind(t, c.KVTransferConfig("probe", `{"kv_connector": "KVCRConnector", "kv_role": "kv_both"}`), `connector "KVCRConnector" is not registered`, "factory.py")
	})
	t.Run("kvcr as a HiCache backend", func(t *testing.T) {
		mustFind(t, c.SGLangArgs("phase1", []string{"--enable-hierarchical-cache", "--hicache-storage-backend", "kvcr"}), "--hicache-storage-backend kvcr", "server_args.py")
	})
	t.Run("a model the engine does not know", func(t *testing.T) {
		old := &upstream.Release{File: "facts/vllm-v0.11.0.yaml", Project: "vllm", Release: "v0.11.0"}
		mustFind(t, c.Model("g", "Qwen/Qwen3.5-4B", old), "has no such architecture", "vllm-v0.11.0.yaml")
	})
}
