package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/templates"
)

// The Dockerfile users get (templates/Dockerfile.quick-start-vllm, the
// embedded one: the pins name no dockerfile) built with the real
// buildkitd, the Internet replaced by stand-ins of the same shape and
// nothing substituted but through the pins file and its build arguments:
// a Debian base with Python, pip, git and a stub vllm laid out like the
// real one; Dynamo with a real Rust extension under lib/bindings/python,
// built by the toolchain the Dockerfile installs (a stand-in rustup-init
// serving Debian's rustc and cargo) through the maturin the lock pins (a
// stand-in wheel on a loopback package index); the adapter and KVCR; etcd
// by its real checksum. The image passes its canary (the build's last
// RUN), builds twice to one digest, passes image verify, and a 4-cell
// sweep in it under pyxis collects 4 OK rows naming the digest and the
// commits; under docker, a cell writes its files as the image's runtime
// user, not root. Then a pull request's lane on it (prLane).
func TestQuickStartDockerfile(t *testing.T) {
	c := clusters(t)[0]
	reg, addr, qsBase := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR"), os.Getenv("KVSWEEP_QS_BASE")
	if reg == "" || addr == "" || qsBase == "" {
		t.Fatal("the registry, buildkitd and the stand-in base are not set up: scripts/buildkit-env.sh install, start and env (the README's test command)")
	}
	qs := quickStartSources(t, "")
	tmp, served, args, git, dynamo := qs.tmp, qs.served, qs.args, qs.git, qs.dynamo
	// A plain vLLM tree, no adapter: what the example pins' upstream
	// commit is until a fork carrying the adapter is pinned.
	git.Repo(t, "plainvllm", map[string]string{"vllm/distributed/kv_transfer/kv_connector/v1/__init__.py": ""})
	adapter := git.Repo(t, "adapter", map[string]string{
		"vllm/distributed/kv_transfer/kv_connector/v1/kvcr_connector.py": "class KVCRConnector:\n    pass\n"})
	kvcr := qs.kvcr
	// The base carries the vLLM image's ENTRYPOINT (upstream/facts: vllm
	// serve): the image built on it must reset it.
	base := imagetest.PushRootfs(t, reg+"/qs/vllm-standin:0.20.1", qsBase, quickStartVLLM, imagetest.Entrypoint("vllm", "serve"))
	// The toolchain comes from the Dynamo checkout's rust-toolchain.toml:
	// the pins name none.
	args = regexp.MustCompile(`(?m)^  RUST_VERSION: .*\n`).ReplaceAll(args, nil)
	pins := filepath.Join(tmp, "pins.yaml")
	src := fmt.Sprintf(`version: 1
base: %s
dynamo: {repo: %s/dynamo.git, ref: v0}
vllm_adapter: {repo: %s/adapter.git, ref: v0}
kvcr: {path: %s}
%s`, base, git.URL, git.URL, kvcr, qs.inputs(args))
	if err := os.WriteFile(pins, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}

	if out := mustKvsweep(t, c, "image", "build", "--check", "--pins", pins, "--insecure-registry", "--buildkit-addr", addr); !strings.Contains(out, "no findings") {
		t.Errorf("image build --check of the shipped Dockerfile:\n%s", out)
	}
	ref, main := reg+"/qs/kvcr:1", reg+"/qs/kvcr:main"
	var digests []string
	// The second build is the image workflow's tag of main: the same image.
	for _, push := range []string{ref, main} {
		out, errs, err := kvsweep(t, c, nil, "image", "build", "--pins", pins, "--push", push, "--insecure-registry",
			"--buildkit-addr", addr, "--progress", "plain", "--media-types", "docker")
		if err != nil {
			t.Fatalf("building the shipped Dockerfile: %v\n%s%s", err, out, lastLines(errs, 60))
		}
		// The canary ran: its output is the build's last step's.
		if len(digests) == 0 && !strings.Contains(errs, "vllm 0.20.1") {
			t.Errorf("the canary did not print the vLLM version:\n%s", lastLines(errs, 40))
		}
		if len(digests) == 0 && !strings.Contains(errs, "kv connector vllm.distributed.kv_transfer.kv_connector.v1.kvcr_connector.KVCRConnector") {
			t.Errorf("the canary did not resolve the KVCR connector through vLLM's factory:\n%s", lastLines(errs, 40))
		}
		m := regexp.MustCompile(`(?m)^digest (sha256:[0-9a-f]{64})$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("image build printed no digest:\n%s", out)
		}
		digests = append(digests, m[1])
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds from the same pins: %s and %s", digests[0], digests[1])
	}
	image := ref + "@" + digests[0]
	mustKvsweep(t, c, "image", "verify", image, "--pins", pins, "--insecure-registry")
	buildFailsLikeUpstream(t, c, tmp, src, addr)
	var in struct {
		Revisions *provenance.SourceRevisions `json:"source_revisions"`
	}
	js := mustKvsweep(t, c, "image", "inspect", image, "--insecure-registry", "--format", "json")
	if err := json.Unmarshal([]byte(js), &in); err != nil || in.Revisions == nil {
		t.Fatalf("image inspect: %v\n%s", err, js)
	}
	lock, _ := os.ReadFile(filepath.Join(served, "requirements.lock"))
	if pl := in.Revisions.PythonLock; pl == nil || pl.SHA256 != sha256hex(lock) {
		t.Errorf("source-revisions.json records the lock as %+v, want sha256 %s", pl, sha256hex(lock))
	}
	if in.Revisions.Commit("dynamo") != dynamo[0] || in.Revisions.Commit("vllm_adapter") != adapter[0] {
		t.Errorf("the image records %s", in.Revisions.Short())
	}

	expect := fmt.Sprintf("{dynamo: %s, vllm_adapter: %s}", dynamo[0], adapter[0])
	dir := stagedSweep(t, c, "pyxis", image, expect, filepath.Join(tmp, "images"), 4)
	checkStagedRun(t, dir, 4, digests[0], in.Revisions)
	runsAsRuntimeUser(t, c, image)
	prLane(t, c, main, digests[0], in.Revisions, kvcr)
}

// quickStartInputs are the stand-ins the quick-start images are built
// from: a package index and download server, Dynamo as upstream lays it
// out on a git server, and a KVCR checkout.
type quickStartInputs struct {
	tmp    string
	served string // the directory srv serves
	srv    *httptest.Server
	args   []byte // the stand-ins' build arguments (build-args.yaml, or build-args-multi.yaml with arm64)
	git    *imagetest.GitServer
	dynamo []string
	kvcr   string
}

// inputs are the pins' lines for the stand-ins: python_lock, and
// build_args with args and the stand-in servers' addresses.
func (qs quickStartInputs) inputs(args []byte) string {
	u := qs.srv.URL
	return fmt.Sprintf("python_lock: %s\nbuild_args:\n%s  RUST_DIST_SERVER: %s\n  ETCD_RELEASES: %s/etcd\n  PROTOC_RELEASES: %s/protoc\n  NATS_RELEASES: %s/nats\n  PIP_INDEX_URL: %s/simple\n",
		filepath.Join(qs.served, "requirements.lock"), args, u, u, u, u, u)
}

// quickStartSources makes them for linux/amd64, and with arm64Root (the
// directory of Debian's arm64 packages scripts/buildkit-env.sh unpacks:
// KVSWEEP_QS_TOOLS_ARM64) for linux/arm64 too, each SHA-256 then given
// per platform.
func quickStartSources(t testing.TB, arm64Root string) quickStartInputs {
	t.Helper()
	tmp := t.TempDir()
	served := filepath.Join(tmp, "served")
	argv, argsFile := []string{served}, "build-args.yaml"
	if arm64Root != "" {
		argv, argsFile = append(argv, arm64Root), "build-args-multi.yaml"
	}
	if out, err := exec.Command("testdata/quickstart/standins.sh", argv...).CombinedOutput(); err != nil {
		t.Fatalf("making the stand-ins: %v\n%s", err, out)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	t.Cleanup(srv.Close)

	args, err := os.ReadFile(filepath.Join(served, argsFile))
	if err != nil {
		t.Fatal(err)
	}
	rustVersion := regexp.MustCompile(`RUST_VERSION: "([^"]+)"`).FindSubmatch(args)
	if rustVersion == nil {
		t.Fatalf("the stand-ins' build arguments name no RUST_VERSION:\n%s", args)
	}
	git := imagetest.StartGitServer(t)
	t.Cleanup(git.Stop)
	// Dynamo as upstream lays it out: a rust-toolchain.toml naming the
	// channel the stand-in toolchain serves, and a build script that needs
	// protoc.
	dynamoFiles := maps.Clone(quickStartDynamo)
	dynamoFiles["rust-toolchain.toml"] = fmt.Sprintf("[toolchain]\nchannel = %q\n", rustVersion[1])
	dynamo := git.Repo(t, "dynamo", dynamoFiles)
	sim, err := os.ReadFile("testdata/phase1-sim.sh")
	if err != nil {
		t.Fatal(err)
	}
	kvcr := imagetest.Checkout(t, map[string]string{
		"pyproject.toml":   "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"nvidia-kvcr\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npackages = [\"kvcr\"]\n",
		"kvcr/__init__.py": "TIER = \"kvcr\"\n",
		// KVCR's HiCache storage backend for SGLang, as SGLang's dynamic
		// loader builds it: backend_class(storage_config, kwargs). Imported
		// only where SGLang is (the SGLang image).
		"kvcr/sglang.py":    "from sglang.srt.mem_cache.hicache_storage import HiCacheStorage\n\n\nclass KVCRStorage(HiCacheStorage):\n    def __init__(self, storage_config, kwargs):\n        self.storage_config, self.kwargs = storage_config, kwargs\n",
		"phase1-sim.sh":     string(sim),
		".gitignore":        "build/\n*.egg-info/\n",
		"docs/kvcr-tier.md": "The KV-cache reuse tier.\n",
	})
	return quickStartInputs{tmp: tmp, served: served, srv: srv, args: args, git: git, dynamo: dynamo, kvcr: kvcr}
}

// buildFailsLikeUpstream: the shipped Dockerfile fails where Dynamo's own
// build would, saying why: without protoc, Dynamo's build script stops;
// with a RUST_VERSION other than the checkout's rust-toolchain.toml, the
// build refuses before cargo runs (rustup would fetch that channel past
// the pins).
func buildFailsLikeUpstream(t *testing.T, c cluster, tmp, pins, addr string) {
	t.Helper()
	shipped := templates.QuickStartDockerfile()
	noProtoc := strings.Replace(string(shipped), "COPY --from=protoc /opt/protoc /opt/protoc\n", "", 1)
	if noProtoc == string(shipped) {
		t.Fatal("the shipped Dockerfile has no protoc COPY to remove")
	}
	df := filepath.Join(tmp, "Dockerfile.no-protoc")
	if err := os.WriteFile(df, []byte(noProtoc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pins, want string
	}{
		{"protoc removed", pins + "dockerfile: " + df + "\n", "Could not find `protoc`"},
		{"RUST_VERSION against rust-toolchain.toml", strings.Replace(pins, "build_args:\n", "build_args:\n  RUST_VERSION: \"1.86.0\"\n", 1), "rust-toolchain.toml says channel"},
		{"an adapter without the KVCR connector", strings.Replace(pins, "/adapter.git, ref: v0}", "/plainvllm.git, ref: v0}", 1), "has no KVCR connector"},
	} {
		p := filepath.Join(tmp, "pins-"+strings.Fields(tc.name)[0]+".yaml")
		if err := os.WriteFile(p, []byte(tc.pins), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errs, err := kvsweep(t, c, nil, "image", "build", "--pins", p, "--output", "oci:"+filepath.Join(tmp, "fail.tar"),
			"--insecure-registry", "--buildkit-addr", addr, "--progress", "plain")
		if err == nil || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: the build %v, want a failure saying %q:\n%s%s", tc.name, err, tc.want, out, lastLines(errs, 30))
		}
	}
}

// runsAsRuntimeUser runs a cell of the image under docker as the image's
// user (container.user: image): what it writes into the sweep directory
// belongs to RUNTIME_UID (1000 by default), not root.
func runsAsRuntimeUser(t *testing.T, c cluster, image string) {
	t.Helper()
	tmp := t.TempDir()
	path := writeSpec(t, tmp, fmt.Sprintf(`version: 1
name: qs-user
scheduler: local
container: {runtime: docker, image: %q, user: image}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --results-dir, "{{.CellDir}}"]
topologies: {aggregated: {resources: {cpus_per_task: 1, time: 10m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, image))
	dir := filepath.Join(tmp, "sweep")
	mustKvsweep(t, c, "render", path, "--out", dir, "--insecure-registry")
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The site's part: the sweep directory is writable by the runtime user.
	cell := filepath.Join(dir, sweep.CellsDir, m.Cells[0].ID)
	if err := os.MkdirAll(cell, 0o777); err != nil || os.Chmod(cell, 0o777) != nil {
		t.Fatal(err)
	}
	if out, errs, err := kvsweep(t, c, nil, "submit", dir, "--scheduler", "local"); err != nil {
		t.Fatalf("the cell under docker: %v\n%s%s\n%s", err, out, errs, cellLog(dir, scheduler.CellStatus{ID: m.Cells[0].ID}))
	}
	fi, err := os.Stat(filepath.Join(cell, sweep.ResultFile))
	if err != nil {
		t.Fatalf("no result: %v\n%s", err, cellLog(dir, scheduler.CellStatus{ID: m.Cells[0].ID}))
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 || st.Gid != 1000 {
		t.Errorf("result.json belongs to %d:%d, want the image's runtime user 1000:1000", st.Uid, st.Gid)
	}
}

// quickStartDynamo is Dynamo as the Dockerfile builds it: the bindings, a
// Rust library (a cdylib) with maturin's mixed layout, and the Python
// package, which loads the library.
var quickStartDynamo = map[string]string{
	"lib/bindings/python/Cargo.toml": `[package]
name = "dynamo-py3"
version = "0.6.0"
edition = "2021"

[lib]
name = "dynamo_core"
crate-type = ["cdylib"]
path = "rust/lib.rs"
`,
	// As Dynamo's lib/llm/build.rs does (upstream/facts/dynamo-v1.2.0.yaml
	// build.protoc): compile protos with the protoc of $PROTOC, and stop,
	// saying so, without one.
	"lib/bindings/python/build.rs": `use std::process::Command;

fn main() {
    let protoc = std::env::var("PROTOC").unwrap_or_else(|_| "protoc".to_string());
    let out = std::env::var("OUT_DIR").unwrap();
    let status = Command::new(&protoc)
        .args(["--proto_path=protos", &format!("--descriptor_set_out={}/kserve.pb", out), "protos/kserve.proto"])
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("protoc {} failed: {}", protoc, s),
        Err(e) => panic!("Could not find ` + "`protoc`" + ` ({}): {}. Install protoc and set PROTOC.", protoc, e),
    }
    println!("cargo:rerun-if-changed=protos/kserve.proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
}
`,
	"lib/bindings/python/protos/kserve.proto": "syntax = \"proto3\";\npackage inference;\nmessage ServerLiveRequest {}\n",
	"lib/bindings/python/rust/lib.rs": `// What the canary calls through the library: proof it was compiled.
#[no_mangle]
pub extern "C" fn dynamo_core_answer() -> u32 {
    42
}
`,
	"lib/bindings/python/pyproject.toml": `[build-system]
requires = ["maturin>=1.5,<2"]
build-backend = "maturin"

[project]
name = "ai-dynamo-runtime"
version = "0.6.0"

[tool.maturin]
module-name = "dynamo._core"
python-source = "python"
`,
	"lib/bindings/python/python/dynamo/_core_info.py": "NAME = \"dynamo._core\"\n",
	"pyproject.toml": `[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "ai-dynamo"
version = "0.6.0"

[tool.setuptools]
packages = ["dynamo"]
`,
	"dynamo/__init__.py": `import ctypes
import os

_core = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "_core.so"))
if _core.dynamo_core_answer() != 42:
    raise ImportError("dynamo._core answers wrong")
`,
}

// quickStartVLLM is the stub vllm over the stand-in base: the package
// laid out like the real one (the adapter's connector directory) and
// installed as pip sees it.
var quickStartVLLM = func() map[string]string {
	site := "usr/local/lib/python3.11/dist-packages/"
	m := map[string]string{
		site + "vllm/__init__.py":                "__version__ = \"0.20.1\"\n",
		site + "vllm-0.20.1.dist-info/METADATA":  "Metadata-Version: 2.1\nName: vllm\nVersion: 0.20.1\n",
		site + "vllm-0.20.1.dist-info/INSTALLER": "pip\n",
		site + "vllm-0.20.1.dist-info/RECORD":    "",
	}
	for _, p := range []string{"distributed", "distributed/kv_transfer", "distributed/kv_transfer/kv_connector", "distributed/kv_transfer/kv_connector/v1"} {
		m[site+"vllm/"+p+"/__init__.py"] = ""
	}
	// vLLM v0.20.1's connector resolution as its facts say
	// (upstream/facts/vllm-v0.20.1.yaml kv_connector.*): a module path is
	// imported first, then the registry, else ValueError.
	m[site+"vllm/config/__init__.py"] = `class KVTransferConfig:
    def __init__(self, kv_connector=None, kv_role=None, kv_connector_module_path=None, **kw):
        if kv_role not in ("kv_producer", "kv_consumer", "kv_both"):
            raise ValueError(f"Unsupported kv_role: {kv_role}")
        self.kv_connector, self.kv_role, self.kv_connector_module_path = kv_connector, kv_role, kv_connector_module_path
`
	m[site+"vllm/distributed/kv_transfer/kv_connector/factory.py"] = `import importlib


class KVConnectorFactory:
    _registry = {"NixlConnector": None, "MultiConnector": None, "OffloadingConnector": None}

    @classmethod
    def get_connector_class(cls, kv_transfer_config):
        name, path = kv_transfer_config.kv_connector, kv_transfer_config.kv_connector_module_path
        if path:
            module = importlib.import_module(path)
            try:
                return getattr(module, name)
            except AttributeError as e:
                raise AttributeError(f"Class {name} not found in {path}") from e
        if name in cls._registry:
            raise NotImplementedError("the stand-in registers no built-in connector classes")
        raise ValueError(f"Unsupported connector type: {name}")
`
	return m
}()

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
