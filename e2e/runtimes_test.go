package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// The users' path, end to end, on the software their clusters run
// (apptainer with --userns: as root in this VM a plain apptainer exec is
// refused for a capability the VM lacks, and --userns is how sites without
// setuid run it):
// kvsweep image build --push makes a miniature quick-start image (base by
// digest, Dynamo and the adapter at commits, a KVCR checkout holding a
// harness stand-in, source-revisions.json), a sweep runs its cells in that
// image on the real Slurm cluster under each container runtime, and the
// collected rows name the image's digest and exactly the commits image
// inspect reads from it.
func TestRuntimes(t *testing.T) {
	c := clusters(t)[0] // with accounting
	ref, digest, revs := buildTestImage(t, c)
	image := ref + "@" + digest
	// The spec expects exactly the commits the image was built from: the
	// check in the job passes.
	expect := fmt.Sprintf("{dynamo: %s, vllm_adapter: %s}", revs.Commit("dynamo"), revs.Commit("vllm_adapter"))
	for _, rt := range []string{"pyxis", "enroot", "docker", "apptainer"} {
		t.Run(rt, func(t *testing.T) {
			mark := argvMark(t)
			dir := runInImage(t, c, rt, image, expect, scheduler.StateCompleted)
			// The four cells run the image staged once (docker pulls
			// through its daemon's own store).
			if n := importsSince(t, mark, digest); rt != "docker" && n != 1 {
				t.Errorf("%d imports of the image for 4 cells under %s, want 1", n, rt)
			}
			run, err := testrun.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, cell := range run.Cells {
				if cell.Outcome != testrun.OK {
					t.Errorf("%s: %s %s", cell.Name, cell.Outcome, cell.Detail)
					continue
				}
				if cell.Image.Digest != digest {
					t.Errorf("%s: image digest %q, want %s", cell.Name, cell.Image.Digest, digest)
				}
				if ms := provenance.Compare(cell.Image.SourceRevisions, revs); len(ms) != 0 {
					t.Errorf("%s: the row's revisions differ from the image's: %v", cell.Name, ms)
				}
			}
			// What a person reads: the report's rows show the digest and
			// the short commits.
			md := mustKvsweep(t, c, "report", dir, "--format", "markdown")
			if !strings.Contains(md, revs.Short()) || !strings.Contains(md, strings.TrimPrefix(digest, "sha256:")[:12]) {
				t.Errorf("the report does not name %s and %s:\n%s", revs.Short(), digest, md)
			}
			if rt == "docker" {
				out, err := exec.Command("docker", "ps", "-aq").CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != "" {
					t.Errorf("containers left after the jobs: %q %v", out, err)
				}
			}
		})
	}
}

// The image records other commits than the spec expects (the pins moved
// after the build): every cell ends PROVENANCE_MISMATCH naming the
// component, and the harness never started.
func TestProvenanceMismatch(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, revs := buildTestImage(t, c)
	other := strings.Repeat("1", 40)
	expect := fmt.Sprintf("{dynamo: %s, vllm_adapter: %s}", other, revs.Commit("vllm_adapter"))
	dir := runInImage(t, c, "pyxis", ref+"@"+digest, expect, scheduler.StateFailed)
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "dynamo: the image has " + revs.Commit("dynamo") + ", the spec expects " + other
	for _, cell := range run.Cells {
		if cell.Outcome != testrun.ProvenanceMismatch || !strings.Contains(cell.Detail, want) || strings.Contains(cell.Detail, "vllm_adapter") {
			t.Errorf("%s: %s %q, want PROVENANCE_MISMATCH %q", cell.Name, cell.Outcome, cell.Detail, want)
		}
		if _, err := os.Stat(filepath.Join(dir, sweep.CellsDir, cell.CellID, sweep.ResultFile)); err == nil {
			t.Errorf("%s: the harness ran (it wrote result.json)", cell.Name)
		}
		if log := cellLog(dir, scheduler.CellStatus{ID: cell.CellID}); strings.Contains(log, "phase1-sim:") {
			t.Errorf("%s: the harness ran:\n%s", cell.Name, log)
		}
	}
	if _, _, err := kvsweep(t, c, nil, "report", dir, "--check"); err == nil {
		t.Error("report --check passed a sweep whose cells ran the wrong image")
	}
}

// The pins move after the image was built (container.pins names the pins
// file, resolved when the sweep is rendered): every cell ends
// PROVENANCE_MISMATCH naming dynamo.
func TestPinsMovedAfterBuild(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, revs := buildTestImage(t, c)
	b, err := os.ReadFile(testImage.pins)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "pins.yaml")
	if err := os.WriteFile(moved, []byte(strings.Replace(string(b), revs.Commit("dynamo"), testImage.newDynamo, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := runInImage(t, c, "docker", ref+"@"+digest, "{}, pins: "+moved, scheduler.StateFailed)
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "dynamo: the image has " + revs.Commit("dynamo") + ", the spec expects " + testImage.newDynamo
	for _, cell := range run.Cells {
		if cell.Outcome != testrun.ProvenanceMismatch || !strings.Contains(cell.Detail, want) {
			t.Errorf("%s: %s %q, want PROVENANCE_MISMATCH %q", cell.Name, cell.Outcome, cell.Detail, want)
		}
	}
}

// A tag-only image in the spec is rendered as the digest its registry
// serves, so every cell runs one image and every row can name it.
func TestTagResolvedToDigest(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, _ := buildTestImage(t, c)
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: tag
container: {runtime: docker, image: %q}
harness: {command: [/opt/kvcr/phase1-sim.sh, --results-dir, "{{.CellDir}}"]}
topologies: {aggregated: {resources: {time: 10m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, ref)
	path := writeSpec(t, tmp, spec)
	mustKvsweep(t, c, "render", path, "--out", filepath.Join(tmp, "sw"), "--insecure-registry")
	m, err := sweep.ReadManifest(filepath.Join(tmp, "sw"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Image != ref+"@"+digest {
		t.Errorf("rendered image %q, want %s@%s", m.Image, ref, digest)
	}
	script, _ := os.ReadFile(filepath.Join(tmp, "sw", m.Jobs[0].Script))
	if !strings.Contains(string(script), "IMAGE="+ref+"@"+digest) {
		t.Errorf("the job script does not run the digest:\n%s", script)
	}
	// --offline keeps the tag, and says so.
	_, errs, err := kvsweep(t, c, nil, "render", path, "--out", filepath.Join(tmp, "sw2"), "--offline")
	if err != nil || !strings.Contains(errs, "is not pinned by digest (--offline)") {
		t.Errorf("--offline: %v %q", err, errs)
	}
}

// testImage is the image the runtime tests share, built once.
var testImage struct {
	ref, digest string
	revs        *provenance.SourceRevisions
	git         *imagetest.GitServer // stopped by TestMain
	dir         string               // the pins and the checkout; removed by TestMain
	// pins is the pins file the image was built from; newDynamo is a later
	// commit of the dynamo repository the image was not built from.
	pins, newDynamo string
}

// buildTestImage builds and pushes the test image with kvsweep image
// build (once per test run); it returns the reference, the pushed digest
// and what image inspect reads from the image.
func buildTestImage(t testing.TB, c cluster) (ref, digest string, revs *provenance.SourceRevisions) {
	t.Helper()
	if testImage.revs != nil {
		return testImage.ref, testImage.digest, testImage.revs
	}
	reg, addr := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR")
	if reg == "" || addr == "" || os.Getenv("KVSWEEP_PYXIS_SO") == "" || os.Getenv("DOCKER_HOST") == "" {
		t.Fatal("the registry, buildkitd, enroot/pyxis and dockerd are not set up: the README's test command starts them (scripts/buildkit-env.sh, scripts/runtime-env.sh)")
	}
	git := imagetest.StartGitServer(t)
	testImage.git = git
	var err error
	if testImage.dir, err = os.MkdirTemp("", "kvsweep-e2e-image-"); err != nil {
		t.Fatal(err)
	}
	// Two commits: the image is built from the first; the second is where
	// the pins move after the build.
	dynamo := git.Repo(t, "dynamo", map[string]string{"dynamo.txt": "dynamo 1\n"}, map[string]string{"dynamo.txt": "dynamo 2\n"})
	adapter := git.Repo(t, "adapter", map[string]string{"adapter.txt": "adapter 1\n"})
	sim, err := os.ReadFile("testdata/phase1-sim.sh")
	if err != nil {
		t.Fatal(err)
	}
	worker, err := os.ReadFile("testdata/dynamo-worker-sim.sh")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"phase1-sim.sh": string(sim), "dynamo-worker-sim.sh": string(worker)}
	// etcd for two-node cells in containers (the head's etcd runs in the
	// image), and bash for the pods of scheduler k8s (they run the job
	// script, as the quick-start image can), with the C libraries they
	// link: the base image is busybox alone.
	// nats-server likewise: the services the jobs start for Dynamo run
	// from the image.
	for src, dst := range map[string]string{"/usr/bin/etcd": "sysroot/bin/etcd", "/usr/sbin/nats-server": "sysroot/bin/nats-server",
		"/bin/bash":                           "sysroot/bin/bash",
		"/lib/x86_64-linux-gnu/libtinfo.so.6": "sysroot/lib/x86_64-linux-gnu/libtinfo.so.6",
		"/lib/x86_64-linux-gnu/libc.so.6":     "sysroot/lib/x86_64-linux-gnu/libc.so.6",
		"/lib64/ld-linux-x86-64.so.2":         "sysroot/lib64/ld-linux-x86-64.so.2"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatalf("etcd and NATS for the test image: %v (the test command installs etcd-server and nats-server)", err)
		}
		files[dst] = string(b)
	}
	kvcr := imagetest.CheckoutAt(t, filepath.Join(testImage.dir, "kvcr"), files, "sysroot/bin/etcd", "sysroot/bin/nats-server", "sysroot/bin/bash", "sysroot/lib64/ld-linux-x86-64.so.2")
	base := imagetest.PushBase(t, reg+"/e2e/busybox:1", "")
	df, _ := filepath.Abs("../imagebuild/testdata/Dockerfile.fixture")
	pins := filepath.Join(testImage.dir, "pins.yaml")
	src := fmt.Sprintf("version: 1\nbase: %s\ndynamo: {repo: %s/dynamo.git, ref: %s}\nvllm_adapter: {repo: %s/adapter.git, ref: %s}\nkvcr: {path: %s}\nbuild_args: {NCCL_VERSION: \"2.27.3\"}\ndockerfile: %s\n",
		base, git.URL, dynamo[0], git.URL, adapter[0], kvcr, df)
	if err := os.WriteFile(pins, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ref = reg + "/e2e/kvcr:1"
	// Docker media types: enroot's registry probe asks without an Accept
	// header, and the test registry (distribution 2.8) answers 404 for an
	// OCI manifest asked that way.
	out := mustKvsweep(t, c, "image", "build", "--pins", pins, "--push", ref, "--insecure-registry",
		"--buildkit-addr", addr, "--progress", "quiet", "--media-types", "docker")
	m := regexp.MustCompile(`(?m)^digest (sha256:[0-9a-f]{64})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("image build printed no digest:\n%s", out)
	}
	var in struct {
		Digest    string                      `json:"digest"`
		Revisions *provenance.SourceRevisions `json:"source_revisions"`
	}
	js := mustKvsweep(t, c, "image", "inspect", ref+"@"+m[1], "--insecure-registry", "--format", "json")
	if err := json.Unmarshal([]byte(js), &in); err != nil || in.Revisions == nil {
		t.Fatalf("image inspect: %v\n%s", err, js)
	}
	if in.Revisions.Commit("dynamo") != dynamo[0] || in.Revisions.Commit("vllm_adapter") != adapter[0] {
		t.Fatalf("the image records %s, not the pinned commits", in.Revisions.Short())
	}
	testImage.ref, testImage.digest, testImage.revs = ref, m[1], in.Revisions
	testImage.pins, testImage.newDynamo = pins, dynamo[1]
	return ref, m[1], in.Revisions
}

// runInImage runs a small grid in image under runtime rt on cluster c,
// waits for it, checks every cell COMPLETED and collects it.
func runInImage(t *testing.T, c cluster, rt, image, expect, state string) string {
	t.Helper()
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: rt-%s
container: {runtime: %s, image: %q, expect: %s, userns: %v}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}
geometries: {g: {flags: {model: m}}}
matrix:
  engine: [vllm, sglang]
  topology: [aggregated]
  geometry: [g]
  case: [TC-01, TC-02]
`, rt, rt, image, expect, rt == "apptainer")
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	id := fmt.Sprintf("rt-%s-%d", rt, time.Now().UnixNano()%1e9)
	defer cancelSweep(t, c, dir)
	mustKvsweep(t, c, "run", path, "--out", dir, "--sweep-id", id, "--scheduler", "slurm", "--wait", "--interval", "1s", "--insecure-registry")
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		if cs.State != state {
			t.Errorf("%s under %s: %s exit %d, want %s\n%s", cs.Name, rt, cs.State, cs.ExitCode, state, cellLog(dir, cs))
		}
	}
	_, _, _ = kvsweep(t, c, nil, "collect", dir, "--store", filepath.Join(tmp, "history.db"))
	return dir
}

// cellLog is a cell's job output, for failure messages.
func cellLog(dir string, cs scheduler.CellStatus) string {
	logs, _ := filepath.Glob(filepath.Join(dir, sweep.CellsDir, cs.ID, "slurm-*.out"))
	more, _ := filepath.Glob(filepath.Join(dir, sweep.LogsDir, "*"))
	var b strings.Builder
	for _, p := range append(logs, more...) {
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "== %s\n%s\n", p, data)
	}
	return b.String()
}

// The seed's 2P+1D-with-sidecars layout in containers: three workers, a
// kvcr_service per worker in a container of its own, the harness given
// the services directory; every service ran and none outlived the job.
func TestDisaggSidecarsInContainers(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, _ := buildTestImage(t, c)
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: disagg-sidecars
container: {runtime: pyxis, image: %q}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies:
  disagg-2p1d-sidecar:
    kind: disagg-2p1d
    resources: {gpus_per_node: 2, cpus_per_task: 1, mem: 200M, time: 5m}
    args: [--topology, disagg, --external-services, "{{.CellDir}}/services",
      --wait-file, "{{.CellDir}}/services/ready-0", --wait-file, "{{.CellDir}}/services/ready-1", --wait-file, "{{.CellDir}}/services/ready-2"]
    service: [sh, -c, 'echo "service $KVCR_SERVICE_INDEX" > "$KVSWEEP_SERVICES_DIR/where-$KVCR_SERVICE_INDEX"; touch "$KVSWEEP_SERVICES_DIR/ready-$KVCR_SERVICE_INDEX"; exec sleep 124']
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [disagg-2p1d-sidecar], geometry: [g], case: [TC-01, TC-04]}
`, ref+"@"+digest)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	defer cancelSweep(t, c, dir)
	mustKvsweep(t, c, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s")
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	if cells[0].State != scheduler.StateCompleted {
		t.Fatalf("%s: %s\n%s", cells[0].Name, cells[0].State, cellLog(dir, cells[0]))
	}
	mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(tmp, "history.db"))
	if run, err := testrun.ReadRun(dir); err != nil || run.Cells[0].Outcome != testrun.OK {
		t.Errorf("collected: %v %+v", err, run)
	}
	for i := range 3 {
		b, _ := os.ReadFile(filepath.Join(dir, sweep.CellsDir, cells[0].ID, "services", fmt.Sprintf("where-%d", i)))
		if strings.TrimSpace(string(b)) != fmt.Sprintf("service %d", i) {
			t.Errorf("service %d: %q", i, b)
		}
	}
	waitGone(t, "sleep 124", "services outlived the job")
}
