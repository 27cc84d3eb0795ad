package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
	"github.com/kvsweep/kvsweep/testrun"
)

// A spec without cluster.platform whose image is an index of linux/amd64
// and linux/arm64: the platform comes from Slurm, the partition's nodes'
// Arch (the test cluster's slurmd reports x86_64). plan says it and where
// it comes from; run says it, pins the index to its amd64 image, stages
// that image once (keyed by its digest), and the row records the amd64
// digest and the platform of the image's record.
func TestPlatformFromSlurm(t *testing.T) {
	c := clusters(t)[0]
	reg, bb := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUSYBOX_ARM64")
	if reg == "" || bb == "" {
		t.Fatal("the registry and the arm64 busybox are not set up: the README's test command starts them (scripts/buildkit-env.sh)")
	}
	sim, err := os.ReadFile("testdata/phase1-sim.sh")
	if err != nil {
		t.Fatal(err)
	}
	ref := reg + "/e2e/kvcr-nodeplatform:1"
	digests := imagetest.PushIndex(t, ref, bb, func(platform string) map[string]string {
		return map[string]string{"opt/kvcr/phase1-sim.sh": string(sim),
			"opt/kvcr-build/source-revisions.json": fmt.Sprintf(`{"schema_version": 1, "platform": %q, "components": {"kvcr": {"commit": "%s", "dirty": false}}, "base": {"name": "busybox", "digest": ""}}`, platform, strings.Repeat("1", 40))}
	})
	tmp := t.TempDir()
	path := writeSpec(t, tmp, fmt.Sprintf(`version: 1
name: nodeplatform
container: {runtime: enroot, image: %q, staging: %q}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, ref, filepath.Join(tmp, "staging")))
	node := "kvs" + c.name + "1" // kvsacct1: the node of the cluster's one partition
	from := "platform linux/amd64 (scheduler slurm, the default partition: Arch=x86_64 of " + node + ")"
	if out := mustKvsweep(t, c, "plan", path); !strings.Contains(out, from+": an image that is an index of several platforms is pinned to its linux/amd64 image") {
		t.Errorf("plan does not say the platform and where it comes from (%s):\n%s", from, out)
	}
	dir := filepath.Join(tmp, "sweep")
	t.Cleanup(func() { cancelSweep(t, c, dir) })
	out, errs, err := kvsweep(t, c, nil, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s", "--insecure-registry")
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out, errs)
	}
	if !strings.Contains(out, from+": images pinned to their linux/amd64 image") {
		t.Errorf("run does not say the platform it read:\n%s", out)
	}
	mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(tmp, "history.db"))
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 1 {
		t.Fatalf("%d cells", len(run.Cells))
	}
	cell := run.Cells[0]
	if cell.Outcome != testrun.OK {
		t.Fatalf("the cell: %s %s", cell.Outcome, cell.Detail)
	}
	if cell.Image.Digest != digests["linux/amd64"] || !strings.HasSuffix(cell.Image.Ref, "@"+digests["linux/amd64"]) {
		t.Errorf("the row's image %s, digest %s: want the amd64 image's %s", cell.Image.Ref, cell.Image.Digest, digests["linux/amd64"])
	}
	if rv := cell.Image.SourceRevisions; rv == nil || rv.Platform != "linux/amd64" {
		t.Errorf("the row's source revisions %+v, want platform linux/amd64", rv)
	}
	staged, _ := filepath.Glob(filepath.Join(tmp, "staging", "sha256-*.sqsh"))
	if want := filepath.Join(tmp, "staging", "sha256-"+strings.TrimPrefix(digests["linux/amd64"], "sha256:")+".sqsh"); len(staged) != 1 || staged[0] != want {
		t.Errorf("staged %v, want %s", staged, want)
	}
}
