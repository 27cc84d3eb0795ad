package imagebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pins writes a pins file for the fixtures and returns its path.
func (e *env) pins(t *testing.T, dynamoRef, adapterRef, kvcrPath, base string) string {
	t.Helper()
	df, _ := filepath.Abs("testdata/Dockerfile.fixture")
	p := filepath.Join(t.TempDir(), "pins.yaml")
	src := fmt.Sprintf(`version: 1
base: %s
dynamo: {repo: %s/dynamo.git, ref: %q}
vllm_adapter: {repo: %s/adapter.git, ref: %q}
kvcr: {path: %s}
build_args: {NCCL_VERSION: "2.27.3"}
dockerfile: %s
`, base, e.gitURL, dynamoRef, e.gitURL, adapterRef, kvcrPath, df)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type repos struct{ dynamo, adapter []string }

var fixtureRepos *repos

func (e *env) repos(t *testing.T) *repos {
	if fixtureRepos == nil {
		fixtureRepos = &repos{
			dynamo:  e.repo(t, "dynamo", map[string]string{"dynamo.txt": "dynamo 1\n"}, map[string]string{"dynamo.txt": "dynamo 2\n"}),
			adapter: e.repo(t, "adapter", map[string]string{"adapter.txt": "adapter 1\n"}),
		}
	}
	return fixtureRepos
}

func resolve(t *testing.T, path string, o ...Option) *Resolved {
	t.Helper()
	p, err := LoadPins(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(context.Background(), p, o...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// After build --push, inspect shows exactly the resolved commits; verify
// passes against the pins and fails, naming the component, once a pin changes.
func TestBuildPushInspectVerify(t *testing.T) {
	e := setup(t)
	rp := e.repos(t)
	kvcr := checkout(t)
	pins := e.pins(t, "v0", rp.adapter[0], kvcr, e.base)
	r := resolve(t, pins, WithInsecureRegistry())
	if r.Revisions[Dynamo].Commit != rp.dynamo[0] {
		t.Fatalf("tag v0 resolved to %s, want %s", r.Revisions[Dynamo].Commit, rp.dynamo[0])
	}
	ref := e.registry + "/test/kvcr:push"
	meta := filepath.Join(t.TempDir(), "build.json")
	start := time.Now()
	res, err := Build(context.Background(), r, WithAddr(e.addr), WithPush(ref), WithInsecureRegistry(),
		WithMetadataFile(meta), WithVersion("test"), WithProgress("plain", testWriter{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built and pushed in %s: %s", time.Since(start), res.Digest)
	in, err := Inspect(context.Background(), ref, WithInsecureRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if in.Digest != res.Digest {
		t.Errorf("pushed digest %s, registry has %s", res.Digest, in.Digest)
	}
	for name, want := range map[string]string{Dynamo: rp.dynamo[0], VLLMAdapter: rp.adapter[0], KVCR: r.Revisions[KVCR].Commit} {
		if got := in.Revisions.Components[name].Commit; got != want {
			t.Errorf("%s: the image records %s, want %s", name, got, want)
		}
	}
	if in.Labels["org.opencontainers.image.revision"] != r.Revisions[KVCR].Commit || in.Labels["dev.kvsweep.dynamo.commit"] != rp.dynamo[0] {
		t.Errorf("labels: %v", in.Labels)
	}
	if in.Annotations["org.opencontainers.image.base.digest"] != r.Base.Digest {
		t.Errorf("annotations: %v", in.Annotations)
	}
	if b, err := os.ReadFile(meta); err != nil || !strings.Contains(string(b), res.Digest) {
		t.Errorf("metadata file: %v %s", err, b)
	}
	if m := Verify(in, r); len(m) != 0 {
		t.Errorf("verify against the same pins: %v", m)
	}
	// The pins move on to dynamo v1: the image no longer matches.
	moved := resolve(t, e.pins(t, "v1", rp.adapter[0], kvcr, e.base), WithInsecureRegistry())
	m := Verify(in, moved)
	if len(m) != 1 || m[0].Component != Dynamo || m[0].Image != rp.dynamo[0] || m[0].Pins != rp.dynamo[1] {
		t.Errorf("verify after a pin changed: %v", m)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
