package imagebuild

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/client"

	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/templates"
)

// The engine key: vllm by default, with its vllm_adapter required; sglang
// without one, and refused with one; anything else refused. Each refusal
// is positioned, wherever the keys stand.
func TestPinsEngine(t *testing.T) {
	const (
		base    = "version: 1\nbase: r.example/sglang:1@sha256:4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a\n"
		dynamo  = "dynamo: {repo: https://example.com/dynamo.git, ref: v1}\n"
		adapter = "vllm_adapter: {repo: https://example.com/vllm.git, ref: v1}\n"
		kvcr    = "kvcr: {path: .}\n"
	)
	tests := []struct {
		name, src string
		engine    string // the engine parsed, when accepted
		adapter   bool   // whether it has a vllm_adapter
		err       string // the whole error, when refused
	}{
		{name: "no engine is vllm", src: base + dynamo + adapter + kvcr, engine: EngineVLLM, adapter: true},
		{name: "vllm", src: base + "engine: vllm\n" + dynamo + adapter + kvcr, engine: EngineVLLM, adapter: true},
		{name: "vllm without its adapter", src: base + dynamo + kvcr,
			err: `pins.yaml:1:1: missing required key "vllm_adapter"`},
		{name: "sglang without an adapter", src: base + "engine: sglang\n" + dynamo + kvcr, engine: EngineSGLang},
		{name: "sglang with an adapter", src: base + "engine: sglang\n" + dynamo + adapter + kvcr,
			err: `pins.yaml:5:15: vllm_adapter: the sglang engine's image has no vLLM adapter (SGLang loads KVCR as a HiCache storage backend, installed with kvcr): remove vllm_adapter, or set engine: vllm`},
		{name: "sglang named after the adapter", src: base + dynamo + "vllm_adapter:\n  repo: https://example.com/vllm.git\n  ref: v1\n" + kvcr + "engine: sglang\n",
			err: `pins.yaml:5:3: vllm_adapter: the sglang engine's image has no vLLM adapter (SGLang loads KVCR as a HiCache storage backend, installed with kvcr): remove vllm_adapter, or set engine: vllm`},
		{name: "an unknown engine", src: base + "engine: trtllm\n" + dynamo + kvcr,
			err: `pins.yaml:3:9: engine: "trtllm" is not an engine kvsweep builds an image for (expected vllm or sglang)`},
		{name: "an engine that is not a scalar", src: base + "engine: [sglang]\n" + dynamo + kvcr,
			err: `pins.yaml:3:9: engine:`},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "pins.yaml")
			p, err := ParsePins(path, []byte(tc.src))
			if tc.err != "" {
				got := ""
				if err != nil {
					got = strings.ReplaceAll(err.Error(), dir+"/", "")
				}
				if !strings.HasPrefix(got, tc.err) || strings.Count(got, "\n") != 0 {
					t.Errorf("error:\n got %s\nwant %s", got, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Engine != tc.engine || (p.Component(VLLMAdapter) != nil) != tc.adapter {
				t.Errorf("engine %q, adapter %v; want %q, %v", p.Engine, p.Component(VLLMAdapter) != nil, tc.engine, tc.adapter)
			}
		})
	}
}

// A base digest left to fill in is refused as a placeholder, not as a
// malformed digest, and the message says how to read the real one.
func TestPinsPlaceholderDigest(t *testing.T) {
	for _, ref := range []string{
		"lmsysorg/sglang:v0.5.11@sha256:REPLACE-WITH-THE-DIGEST-OF-lmsysorg/sglang:v0.5.11",
		"lmsysorg/sglang:v0.5.11@sha256:<DIGEST>",
		"lmsysorg/sglang:v0.5.11@sha256:" + strings.Repeat("0", 64),
	} {
		err := checkBase(ref)
		if err == nil || !strings.Contains(err.Error(), "the digest is a placeholder: pin the image's digest (docker buildx imagetools inspect lmsysorg/sglang:v0.5.11)") {
			t.Errorf("%s: %v", ref, err)
		}
	}
	if err := checkBase("lmsysorg/sglang:v0.5.11@sha256:abc"); err == nil || !strings.Contains(err.Error(), "is not sha256: and 64 hex digits") {
		t.Errorf("a short digest: %v", err)
	}
}

// examples/sglang.pins.yaml is pins.yaml's compatibility set for SGLang:
// refused for its base digest alone, a placeholder (no digest of the
// image is known here), and with a digest filled in it parses as an
// SGLang pins file whose build, over the embedded SGLang Dockerfile with
// the committed lock, has no findings.
func TestExampleSGLangPins(t *testing.T) {
	path := filepath.Join("..", "examples", "sglang.pins.yaml")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParsePins(path, src)
	lines := strings.Split(string(src), "\n")
	baseLine := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "base: ") }) + 1
	want := regexp.MustCompile(`^` + regexp.QuoteMeta(path) + `:` + strconv.Itoa(baseLine) + `:7: base: "lmsysorg/sglang:v0\.5\.11@sha256:[^"]*": the digest is a placeholder`)
	if err == nil || strings.Contains(err.Error(), "\n") || !want.MatchString(err.Error()) {
		t.Fatalf("%s: got %v, want only its placeholder digest refused at line %d", path, err, baseLine)
	}
	filled := regexp.MustCompile(`sha256:REPLACE[^\s]*`).ReplaceAll(src, []byte("sha256:"+strings.Repeat("5e", 32)))
	p, err := ParsePins(path, filled)
	if err != nil {
		t.Fatal(err)
	}
	if p.Engine != EngineSGLang || p.Component(VLLMAdapter) != nil || !strings.HasPrefix(p.Base, "lmsysorg/sglang:v0.5.11@") {
		t.Errorf("engine %q, base %q, adapter %v", p.Engine, p.Base, p.Component(VLLMAdapter))
	}
	// The same set as pins.yaml: Dynamo, the lock and every build argument.
	vsrc, err := os.ReadFile(filepath.Join("..", "examples", "pins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParsePins(filepath.Join("..", "examples", "pins.yaml"), vsrc)
	if err != nil {
		t.Fatal(err)
	}
	if pd, vd := p.Component(Dynamo), v.Component(Dynamo); pd.Repo != vd.Repo || pd.Ref != vd.Ref {
		t.Errorf("dynamo %+v, pins.yaml's %+v", *p.Component(Dynamo), *v.Component(Dynamo))
	}
	if p.PythonLock != v.PythonLock || !slices.Equal(p.ArgKeys, v.ArgKeys) {
		t.Errorf("python_lock %s, build_args %v; pins.yaml's %s, %v", p.PythonLock, p.ArgKeys, v.PythonLock, v.ArgKeys)
	}
	for k, val := range v.BuildArgs {
		if p.BuildArgs[k] != val {
			t.Errorf("build_args.%s %q, pins.yaml's %q", k, p.BuildArgs[k], val)
		}
	}
	r := &Resolved{Pins: p, BuildArgs: p.BuildArgs}
	if r.PythonLock, err = hashLock(p.PythonLock); err != nil {
		t.Fatal(err)
	}
	fs, err := Check(r)
	if err != nil || len(fs) != 0 {
		t.Errorf("image build --check of the SGLang pins: %v %v", fs, err)
	}
}

// A build from SGLang pins: no vllm_adapter anywhere in what BuildKit is
// asked for or what the image records; the embedded SGLang Dockerfile is
// what is mounted; inspect, describe and verify cope with the record.
func TestSGLangPlan(t *testing.T) {
	kv := t.TempDir()
	r := &Resolved{
		Pins: &Pins{File: "pins.yaml", Engine: EngineSGLang},
		Base: provenance.Base{Name: "lmsysorg/sglang:v0.5.11", Digest: "sha256:" + strings.Repeat("5e", 32)},
		Revisions: map[string]Revision{
			Dynamo: {Component: provenance.Component{Repo: "https://github.com/ai-dynamo/dynamo.git", Ref: "v1.2.0", Commit: strings.Repeat("d1", 20)}, CommitTime: 1767225600},
			KVCR:   {Component: provenance.Component{Commit: strings.Repeat("c0", 20)}, Path: kv, CommitTime: 1767225700},
		},
		BuildArgs: map[string]string{"RUST_VERSION": "1.90.0"},
		Epoch:     1767225700,
	}
	plan := MakePlan(r, "v0.0.0-test", "(dry run)")
	for k, v := range plan.FrontendAttrs {
		if strings.Contains(strings.ToLower(k+v), "vllm") {
			t.Errorf("frontend attribute %s=%s", k, v)
		}
	}
	if plan.FrontendAttrs["build-arg:DYNAMO_COMMIT"] != strings.Repeat("d1", 20) || plan.FrontendAttrs["context:dynamo"] == "" {
		t.Errorf("no Dynamo in %v", plan.FrontendAttrs)
	}
	if plan.Dockerfile != "(embedded) Dockerfile.quick-start-sglang" {
		t.Errorf("dockerfile %q", plan.Dockerfile)
	}
	if names := plan.Revisions.Names(); !slices.Equal(names, []string{Dynamo, KVCR}) {
		t.Errorf("source-revisions.json components %v", names)
	}

	// The Dockerfile mounted for the solve is the engine's.
	tmp := t.TempDir()
	solve := client.SolveOpt{FrontendAttrs: map[string]string{}}
	if err := localMounts(&solve, r, plan, tmp); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(tmp, "dockerfile", "Dockerfile"))
	if err != nil || !bytes.Equal(got, templates.QuickStartSGLangDockerfile()) {
		t.Errorf("the mounted Dockerfile is not the embedded SGLang one (%v)", err)
	}
	if bytes.Contains(templates.QuickStartSGLangDockerfile(), []byte("vllm_adapter")) {
		t.Error("the SGLang Dockerfile names vllm_adapter")
	}

	// What inspect, build and verify print of the record.
	rv := plan.Revisions
	want := "dynamo@" + strings.Repeat("d1", 20) + " kvcr@" + strings.Repeat("c0", 20) + " on lmsysorg/sglang:v0.5.11@sha256:" + strings.Repeat("5e", 32)
	if d := Describe(&rv); d != want {
		t.Errorf("describe:\n got %s\nwant %s", d, want)
	}
	var b bytes.Buffer
	(&Inspection{Ref: "r/kvcr-sglang:1", Digest: "sha256:" + strings.Repeat("ab", 32), Revisions: &rv}).WriteText(&b)
	if strings.Contains(b.String(), "vllm_adapter") || !strings.Contains(b.String(), "dynamo:") || !strings.Contains(b.String(), "kvcr:") {
		t.Errorf("inspect:\n%s", b.String())
	}
	in := &Inspection{Revisions: &rv}
	if ms := Verify(in, r); len(ms) != 0 {
		t.Errorf("verify against its own pins: %v", ms)
	}
	// An SGLang image verified against vLLM pins lacks the adapter.
	rVLLM := *r
	rVLLM.Revisions = map[string]Revision{Dynamo: r.Revisions[Dynamo], KVCR: r.Revisions[KVCR],
		VLLMAdapter: {Component: provenance.Component{Repo: "https://example.com/vllm.git", Commit: strings.Repeat("a1", 20)}}}
	if ms := Verify(in, &rVLLM); len(ms) != 1 || ms[0].Component != VLLMAdapter || ms[0].Image != "nothing" {
		t.Errorf("verify against vLLM pins: %v", ms)
	}
}
