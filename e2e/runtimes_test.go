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

	"github.com/kvsweep/kvsweep/internal/imagetest"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// The users' path, end to end, on the software their clusters run:
// kvsweep image build --push makes a miniature quick-start image (base by
// digest, Dynamo and the adapter at commits, a KVCR checkout holding a
// harness stand-in, source-revisions.json), a sweep runs its cells in that
// image on the real Slurm cluster under each container runtime, and the
// collected rows name the image's digest and exactly the commits image
// inspect reads from it.
func TestRuntimes(t *testing.T) {
	c := clusters(t)[0] // with accounting
	reg, addr := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR")
	if reg == "" || addr == "" || os.Getenv("KVSWEEP_PYXIS_SO") == "" || os.Getenv("DOCKER_HOST") == "" {
		t.Fatal("the registry, buildkitd, enroot/pyxis and dockerd are not set up: the README's test command starts them (scripts/buildkit-env.sh, scripts/runtime-env.sh)")
	}
	ref, digest, revs := buildTestImage(t, c, reg, addr)
	image := ref + "@" + digest
	for _, rt := range []string{"pyxis", "enroot", "docker"} {
		t.Run(rt, func(t *testing.T) {
			dir := runInImage(t, c, rt, image)
			run, err := reports.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, cell := range run.Cells {
				if cell.Outcome != reports.OK {
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

// buildTestImage builds and pushes the test image with kvsweep image
// build; it returns the reference, the pushed digest and what image
// inspect reads from the image.
func buildTestImage(t *testing.T, c cluster, reg, addr string) (ref, digest string, revs *provenance.SourceRevisions) {
	t.Helper()
	git := imagetest.StartGitServer(t)
	t.Cleanup(git.Stop)
	dynamo := git.Repo(t, "dynamo", map[string]string{"dynamo.txt": "dynamo 1\n"})
	adapter := git.Repo(t, "adapter", map[string]string{"adapter.txt": "adapter 1\n"})
	sim, err := os.ReadFile("testdata/phase1-sim.sh")
	if err != nil {
		t.Fatal(err)
	}
	kvcr := imagetest.Checkout(t, map[string]string{"phase1-sim.sh": string(sim)})
	base := imagetest.PushBase(t, reg+"/e2e/busybox:1", "")
	df, _ := filepath.Abs("../imagebuild/testdata/Dockerfile.fixture")
	pins := filepath.Join(t.TempDir(), "pins.yaml")
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
	return ref, m[1], in.Revisions
}

// runInImage runs a small grid in image under runtime rt on cluster c,
// waits for it, checks every cell COMPLETED and collects it.
func runInImage(t *testing.T, c cluster, rt, image string) string {
	t.Helper()
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: rt-%s
container: {runtime: %s, image: %q}
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
`, rt, rt, image)
	path := filepath.Join(tmp, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "sweep")
	id := fmt.Sprintf("rt-%s-%d", rt, time.Now().UnixNano()%1e9)
	defer cancelSweep(t, c, dir)
	mustKvsweep(t, c, "run", path, "--out", dir, "--sweep-id", id, "--scheduler", "slurm", "--wait", "--interval", "1s")
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		if cs.State != scheduler.StateCompleted {
			t.Errorf("%s under %s: %s exit %d\n%s", cs.Name, rt, cs.State, cs.ExitCode, cellLog(dir, cs))
		}
	}
	mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(tmp, "history.db"))
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
