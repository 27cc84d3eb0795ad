package lane

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/scheduler"
)

// platformImages is an image builder whose images are indexes of the
// given platforms; PinDigest records the platform it was asked for.
type platformImages struct {
	Images
	platforms []string
	pinned    []string
}

func (p *platformImages) ImagePlatforms(context.Context, string, bool) ([]string, error) {
	return p.platforms, nil
}

func (p *platformImages) PinDigest(_ context.Context, image, platform string, _ bool) (string, error) {
	p.pinned = append(p.pinned, platform)
	return image + "@sha256:" + strings.Repeat("a", 64), nil
}

type fakeNodes []scheduler.NodePlatform

func (f fakeNodes) NodePlatforms(context.Context, scheduler.PlatformQuery) ([]scheduler.NodePlatform, error) {
	return f, nil
}

// prepareOn renders a spec of an image index on nodes that report the
// given platforms, and returns what it said, the job script and the
// platforms the images were pinned to.
func prepareOn(t *testing.T, cluster string, images []string, nodes fakeNodes) (string, string, []string, error) {
	t.Helper()
	scheduler.RegisterPlatformer("slurm", func(scheduler.Config) scheduler.Platformer { return nodes })
	t.Cleanup(func() { scheduler.RegisterPlatformer("slurm", nil) })
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	src := `version: 1
name: idx
cluster: {partition: gpu` + cluster + `}
container: {runtime: enroot, image: reg.example/kvcr:1}
harness: {command: [/opt/kvcr/sim.sh]}
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	im := &platformImages{platforms: images}
	var out, errb bytes.Buffer
	l := &Lane{Stdout: &out, Stderr: &errb, Tools: Tools{Images: im}, Render: RenderOptions{Out: filepath.Join(dir, "sweep")}}
	_, err := l.Prepare(context.Background(), spec)
	scripts, _ := filepath.Glob(filepath.Join(dir, "sweep", "jobs", "*.sbatch"))
	var script []byte
	if len(scripts) > 0 {
		script, _ = os.ReadFile(scripts[0])
	}
	return out.String(), string(script), im.pinned, err
}

// Without cluster.platform, an index of two platforms is pinned to the
// platform the partition's nodes report, render says which and where
// from, and the job checks its node as with cluster.platform.
func TestChoosePlatformFromNodes(t *testing.T) {
	gh := fakeNodes{{Node: "gh001", Platform: "linux/arm64", From: "Arch=aarch64"}, {Node: "gh002", Platform: "linux/arm64", From: "feature arm64"}}
	out, script, pinned, err := prepareOn(t, "", []string{"linux/amd64", "linux/arm64"}, gh)
	if err != nil {
		t.Fatal(err)
	}
	want := "platform linux/arm64 (scheduler slurm, partition gpu: Arch=aarch64 of gh001; feature arm64 of gh002): images pinned to their linux/arm64 image\n"
	if !strings.Contains(out, want) {
		t.Errorf("render said:\n%s\nwant %q", out, want)
	}
	if len(pinned) != 1 || pinned[0] != "linux/arm64" {
		t.Errorf("pinned to %q, want linux/arm64", pinned)
	}
	if !strings.Contains(script, "IMAGE_PLATFORM='linux/arm64'") && !strings.Contains(script, "IMAGE_PLATFORM=linux/arm64") {
		t.Errorf("the job does not check its node's platform:\n%s", script)
	}

	// A plain image, and cluster.platform, are as they were: nothing is
	// read from the nodes.
	out, _, pinned, err = prepareOn(t, "", []string{"linux/amd64"}, gh)
	if err != nil || strings.Contains(out, "platform") || len(pinned) != 1 || pinned[0] != "" {
		t.Errorf("a plain image: %v %q pinned %q", err, out, pinned)
	}
	_, _, pinned, err = prepareOn(t, ", platform: linux/amd64", []string{"linux/amd64", "linux/arm64"}, gh)
	if err != nil || len(pinned) != 1 || pinned[0] != "linux/amd64" {
		t.Errorf("cluster.platform: %v pinned %q", err, pinned)
	}
}

// A partition whose nodes are of two platforms is refused at render,
// naming the image, its platforms, and each platform's nodes.
func TestChoosePlatformMixedRefused(t *testing.T) {
	mixed := fakeNodes{{Node: "gh001", Platform: "linux/arm64", From: "Arch=aarch64"}, {Node: "h100-01", Platform: "linux/amd64", From: "Arch=x86_64"}}
	_, script, _, err := prepareOn(t, "", []string{"linux/amd64", "linux/arm64"}, mixed)
	want := "image reg.example/kvcr:1 is an index of linux/amd64, linux/arm64 and cluster.platform is not set: scheduler slurm, partition gpu: its nodes are of 2 platforms: linux/amd64 (Arch=x86_64 of h100-01); linux/arm64 (Arch=aarch64 of gh001); set cluster.platform"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %q", err, want)
	}
	if script != "" {
		t.Error("a job script was written")
	}
}

// An image pinned by digest whose registry cannot be read renders as
// before (no registry was asked for it), with a warning; nothing is
// read of the nodes.
func TestChoosePlatformUnreadable(t *testing.T) {
	scheduler.RegisterPlatformer("slurm", func(scheduler.Config) scheduler.Platformer {
		t.Error("the nodes were asked")
		return fakeNodes{}
	})
	t.Cleanup(func() { scheduler.RegisterPlatformer("slurm", nil) })
	im := &failingPlatforms{}
	var out, errb bytes.Buffer
	l := &Lane{Stdout: &out, Stderr: &errb, Tools: Tools{Images: im}}
	spec := &matrix.Spec{Container: matrix.Container{Runtime: "enroot", Image: "reg.example/kvcr@sha256:" + strings.Repeat("b", 64)}}
	if err := l.choosePlatform(context.Background(), spec); err != nil || spec.Cluster.Platform != "" {
		t.Fatalf("%v, platform %q", err, spec.Cluster.Platform)
	}
	if want := "kvsweep: warning: the platforms of reg.example/kvcr@sha256:" + strings.Repeat("b", 64) + " could not be read (registry down): it runs as named; if it is an index of several platforms, set cluster.platform\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}

type failingPlatforms struct{ Images }

func (failingPlatforms) ImagePlatforms(context.Context, string, bool) ([]string, error) {
	return nil, errors.New("registry down")
}
