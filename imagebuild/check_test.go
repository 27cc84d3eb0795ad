package imagebuild

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
)

// checkPins is a pins file for the checks: what they read of it is the
// build arguments, the Dockerfile and the lock.
func checkPins(t *testing.T, dockerfile, lock string, args ...string) *Resolved {
	t.Helper()
	return checkPinsFor(t, EngineVLLM, dockerfile, lock, args...)
}

// checkPinsFor is checkPins for an engine: an SGLang pins file has engine:
// sglang where the vLLM one has its vllm_adapter, so both have their
// build arguments on the same lines.
func checkPinsFor(t *testing.T, engine, dockerfile, lock string, args ...string) *Resolved {
	t.Helper()
	line4 := "vllm_adapter: {repo: https://example.com/vllm.git, ref: v1}"
	if engine == EngineSGLang {
		line4 = "engine: sglang"
	}
	src := fmt.Sprintf(`version: 1
base: r.example/vllm:1@sha256:%s
dynamo: {repo: https://example.com/dynamo.git, ref: v1}
%s
kvcr: {path: .}
build_args:
%s
`, strings.Repeat("4a", 32), line4, strings.Join(args, "\n"))
	if dockerfile != "" {
		src += "dockerfile: " + dockerfile + "\n"
	}
	if lock != "" {
		src += "python_lock: " + lock + "\n"
	}
	p, err := ParsePins("testdata/check/pins.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r := &Resolved{Pins: p, BuildArgs: p.BuildArgs, Dockerfile: p.Dockerfile}
	if p.PythonLock != "" {
		if r.PythonLock, err = hashLock(p.PythonLock); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// What kvsweep image build --check (and every build) refuses, one
// fixture a class, each finding with its file and line; the shipped
// Dockerfile with a complete pins file has none.
func TestCheck(t *testing.T) {
	shipped := []string{`  RUSTUP_VERSION: "1.28.1"`, `  RUSTUP_SHA256: "x"`, `  RUST_VERSION: "1.86.0"`,
		`  ETCD_VERSION: v3.5.21`, `  ETCD_SHA256: "x"`, `  RUNTIME_UID: "1000"`}
	cases := []struct {
		name string
		r    *Resolved
	}{
		{"the shipped Dockerfile", checkPins(t, "", "hashed.lock", shipped...)},
		{"the shipped Dockerfile without a lock", checkPins(t, "", "", shipped...)},
		{"the shipped Dockerfile, an argument it does not declare", checkPins(t, "", "hashed.lock", append(shipped, `  NCCL_VERSION: "2.27.3"`)...)},
		{"a lock that floats", checkPins(t, "", "unhashed.lock", shipped...)},
		{"everything that floats", checkPins(t, "floats.Dockerfile", "hashed.lock", `  NCCL_VERSION: "2.27.3"`)},
		{"the shipped SGLang Dockerfile", checkPinsFor(t, EngineSGLang, "", "hashed.lock", shipped...)},
		{"the shipped SGLang Dockerfile without a lock", checkPinsFor(t, EngineSGLang, "", "", shipped...)},
		{"the shipped SGLang Dockerfile, an argument it does not declare", checkPinsFor(t, EngineSGLang, "", "hashed.lock", append(shipped, `  NCCL_VERSION: "2.27.3"`)...)},
	}
	wd, _ := filepath.Abs(".")
	var b strings.Builder
	for _, c := range cases {
		fs, err := Check(c.r)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fmt.Fprintf(&b, "== %s: %d\n", c.name, len(fs))
		for _, f := range fs {
			f.File = strings.TrimPrefix(f.File, wd+"/")
			fmt.Fprintln(&b, f)
		}
	}
	golden.Check(t, "testdata/check/findings.golden", []byte(b.String()))
	if fs, _ := Check(cases[0].r); len(fs) != 0 {
		t.Errorf("the shipped Dockerfile has findings: %v", fs)
	}
	if fs, _ := Check(cases[5].r); len(fs) != 0 {
		t.Errorf("the shipped SGLang Dockerfile has findings: %v", fs)
	}
}

func TestShellCommands(t *testing.T) {
	got := shellCommands(`A=1 pip install "x>=1" && if [ -n "$V" ]; then apt-get install -y 'a b'; fi | sh; echo a\ b`)
	want := [][]string{{"pip", "install", "x>=1"}, {"[", "-n", "$V", "]"}, {"apt-get", "install", "-y", "a b"}, {"fi"}, {"sh"}, {"echo", "a b"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// BuildKit's own checks, through the real buildkitd: the shipped
// Dockerfile has no findings (with the build's arguments and contexts:
// the pins of the e2e fixture and a lock); a Dockerfile that breaks
// BuildKit's rules gets each named, with its line.
func TestLint(t *testing.T) {
	e := setup(t)
	rp := e.repos(t)
	pins := e.pins(t, "v0", rp.adapter[0], checkout(t), e.base)
	r := resolve(t, pins, WithInsecureRegistry())
	r.Dockerfile = ""
	var err error
	if r.PythonLock, err = hashLock("testdata/check/hashed.lock"); err != nil {
		t.Fatal(err)
	}
	fs, err := Lint(t.Context(), r, WithAddr(e.addr), WithInsecureRegistry())
	if err != nil || len(fs) != 0 {
		t.Errorf("the shipped Dockerfile: %v %v", fs, err)
	}
	r.Dockerfile, _ = filepath.Abs("testdata/check/lint.Dockerfile")
	fs, err = Lint(t.Context(), r, WithAddr(e.addr), WithInsecureRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fs {
		f.File = filepath.Base(f.File)
		fmt.Fprintln(&b, f)
	}
	golden.Check(t, "testdata/check/lint.golden", []byte(b.String()))
}
