package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
	"github.com/kvsweep/kvsweep/testrun"
)

// One image index for GH200-class (aarch64) and x86-64 nodes, the way a
// user makes and runs it: kvsweep image build --platform
// linux/amd64,linux/arm64 through buildkitd, the arm64 steps under QEMU's
// user emulation (scripts/buildkit-env.sh registers it); the index holds
// two images and verify passes for each. A sweep pinned to linux/arm64
// (cluster.platform) runs its cell in the arm64 image under emulation
// (cluster.emulate) on the test cluster's x86-64 node, and its row
// records the arm64 image's digest and platform; without emulate the
// node is refused before the harness, naming both platforms.
func TestMultiPlatformImage(t *testing.T) {
	c := clusters(t)[0]
	ref, digests := buildTwoPlatforms(t, c)
	for _, emulate := range []bool{true, false} {
		t.Run(fmt.Sprintf("emulate=%v", emulate), func(t *testing.T) {
			tmp := t.TempDir()
			path := writeSpec(t, tmp, fmt.Sprintf(`version: 1
name: arm64
cluster: {platform: linux/arm64, emulate: %v}
container: {runtime: enroot, image: %q, staging: %q}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, emulate, ref, filepath.Join(tmp, "staging")))
			dir := filepath.Join(tmp, "sweep")
			t.Cleanup(func() { cancelSweep(t, c, dir) })
			_, _, _ = kvsweep(t, c, nil, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s", "--insecure-registry")
			// collect exits 1 for the refused cell: the run is read back.
			_, _, _ = kvsweep(t, c, nil, "collect", dir, "--store", filepath.Join(tmp, "history.db"))
			run, err := testrun.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Cells) != 1 {
				t.Fatalf("%d cells", len(run.Cells))
			}
			cell := run.Cells[0]
			if cell.Image.Digest != digests["linux/arm64"] {
				t.Errorf("the row's image digest is %q, want the arm64 image's %s", cell.Image.Digest, digests["linux/arm64"])
			}
			if emulate {
				checkEmulated(t, cell)
				// One import of the arm64 image, keyed by its digest.
				staged, _ := filepath.Glob(filepath.Join(tmp, "staging", "sha256-*.sqsh"))
				if want := filepath.Join(tmp, "staging", "sha256-"+strings.TrimPrefix(digests["linux/arm64"], "sha256:")+".sqsh"); len(staged) != 1 || staged[0] != want {
					t.Errorf("staged %v, want %s", staged, want)
				}
				return
			}
			want := "the node is not of the image's platform: the image " + strings.SplitN(ref, "@", 2)[0] + "@" + digests["linux/arm64"] + " is linux/arm64, the node "
			if cell.Outcome != testrun.NotStarted || cell.Class != testrun.ClassInfra || !strings.Contains(cell.Detail, want) || !strings.Contains(cell.Detail, "is linux/amd64 (x86_64)") {
				t.Errorf("a linux/arm64 image on an x86-64 node without emulation: %s [%s] %q, want NOT_STARTED [infra] naming both platforms", cell.Outcome, cell.Class, cell.Detail)
			}
			if _, err := os.Stat(filepath.Join(dir, "cells", cell.CellID, "harness-started")); err == nil {
				t.Error("the harness started")
			}
		})
	}
}

func checkEmulated(t *testing.T, cell testrun.CellResult) {
	t.Helper()
	if cell.Outcome != testrun.OK {
		t.Fatalf("the arm64 cell: %s %s", cell.Outcome, cell.Detail)
	}
	if rv := cell.Image.SourceRevisions; rv == nil || rv.Platform != "linux/arm64" {
		t.Errorf("the row's source revisions %+v, want platform linux/arm64", rv)
	}
	if cell.Emulated != "linux/arm64 on linux/amd64" {
		t.Errorf("emulated %q, want %q", cell.Emulated, "linux/arm64 on linux/amd64")
	}
}

// buildTwoPlatforms builds the fixture (the quick-start Dockerfile's
// structure on busybox, with the phase 1 harness stand-in) for linux/amd64
// and linux/arm64, checks the index with image inspect and verify, and
// returns its reference by tag and each platform's digest.
func buildTwoPlatforms(t *testing.T, c cluster) (string, map[string]string) {
	t.Helper()
	reg, addr, bb := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR"), os.Getenv("KVSWEEP_BUSYBOX_ARM64")
	if reg == "" || addr == "" || bb == "" {
		t.Fatal("the registry, buildkitd and the arm64 busybox are not set up: the README's test command starts them (scripts/buildkit-env.sh)")
	}
	git := imagetest.StartGitServer(t)
	t.Cleanup(git.Stop)
	dynamo := git.Repo(t, "dynamo", map[string]string{"dynamo.txt": "dynamo 1\n"})
	adapter := git.Repo(t, "adapter", map[string]string{"adapter.txt": "adapter 1\n"})
	sim, err := os.ReadFile("testdata/phase1-sim.sh")
	if err != nil {
		t.Fatal(err)
	}
	kvcr := imagetest.Checkout(t, map[string]string{"phase1-sim.sh": string(sim)})
	base := imagetest.PushBaseIndex(t, reg+"/e2e/busybox-multi:1", bb)
	df, _ := filepath.Abs("../imagebuild/testdata/Dockerfile.fixture")
	pins := filepath.Join(t.TempDir(), "pins.yaml")
	src := fmt.Sprintf("version: 1\nplatforms: [linux/amd64, linux/arm64]\nbase: %s\ndynamo: {repo: %s/dynamo.git, ref: %s}\nvllm_adapter: {repo: %s/adapter.git, ref: %s}\nkvcr: {path: %s}\nbuild_args: {NCCL_VERSION: \"2.27.3\"}\ndockerfile: %s\n",
		base, git.URL, dynamo[0], git.URL, adapter[0], kvcr, df)
	if err := os.WriteFile(pins, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := reg + "/e2e/kvcr-multi:1"
	start := time.Now()
	// Docker media types: enroot's registry probe (see buildTestImage).
	out := mustKvsweep(t, c, "image", "build", "--pins", pins, "--push", ref, "--insecure-registry", "--platform", "linux/amd64,linux/arm64",
		"--buildkit-addr", addr, "--progress", "quiet", "--media-types", "docker")
	t.Logf("image build --platform linux/amd64,linux/arm64 (arm64 under QEMU): %s", time.Since(start).Round(100*time.Millisecond))
	digests := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(linux/(?:amd64|arm64)) (sha256:[0-9a-f]{64})$`).FindAllStringSubmatch(out, -1) {
		digests[m[1]] = m[2]
	}
	if len(digests) != 2 {
		t.Fatalf("image build printed %d platforms' digests, want 2:\n%s", len(digests), out)
	}
	out = mustKvsweep(t, c, "image", "verify", ref, "--pins", pins, "--insecure-registry")
	for _, pl := range []string{"linux/amd64", "linux/arm64"} {
		if !strings.Contains(out, ref+" "+pl+" matches "+pins) {
			t.Errorf("image verify does not pass %s:\n%s", pl, out)
		}
	}
	out = mustKvsweep(t, c, "image", "inspect", ref, "--insecure-registry")
	if !strings.Contains(out, "platform: linux/arm64") || !strings.Contains(out, "digest:  "+digests["linux/arm64"]) {
		t.Errorf("image inspect does not show the arm64 image %s:\n%s", digests["linux/arm64"], out)
	}
	return ref, digests
}
