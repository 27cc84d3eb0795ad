package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's demo builds kvsweep with -tags lite: it must run the demo,
// and say plainly what it left out rather than fail obscurely.
func TestLiteBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kvsweep")
	if out, err := exec.Command("go", "build", "-tags", "lite", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags lite: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "list", "-tags", "lite", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, heavy := range []string{"github.com/moby/buildkit/client", "go.etcd.io/etcd/client/v3", "github.com/google/go-containerregistry/pkg/v1/remote",
		"k8s.io/client-go/kubernetes", "k8s.io/api/batch/v1"} {
		if strings.Contains(string(out), heavy+"\n") {
			t.Errorf("the lite build links %s", heavy)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "KVSWEEP_STORE="+filepath.Join(dir, "history.db"))
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := run("demo", "--out", filepath.Join(dir, "demo")); err != nil || !strings.Contains(out, "The sweep is in") {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if out, err := run("report", "--history", "--format", "csv"); err != nil || !strings.Contains(out, ",quickstart-") {
		t.Fatalf("report --history after the demo: %v\n%s", err, out)
	}
	if out, err := run("image", "build", "--pins", "x.yaml", "--push", "r/x:1"); err == nil || !strings.Contains(out, "built with -tags lite") {
		t.Errorf("image build in a lite build: %v\n%s", err, out)
	}
	if out, err := run("render", "../../examples/phase1.yaml", "--offline", "--out", filepath.Join(dir, "p1")); err == nil || !strings.Contains(out, "coordinate through kvsweep job") {
		t.Errorf("render of two-node cells in a lite build: %v\n%s", err, out)
	}
	spec := filepath.Join(dir, "k8s.yaml")
	if err := os.WriteFile(spec, []byte(`version: 1
name: k8s
scheduler: k8s
kubernetes: {volume: {host_path: `+dir+`}}
container: {image: "r.example.com/x:1@sha256:0000000000000000000000000000000000000000000000000000000000000000"}
harness: {command: [true]}
topologies: {aggregated: {resources: {gpus_per_node: 1, time: 1m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run("render", spec, "--offline", "--out", filepath.Join(dir, "k8s")); err == nil || !strings.Contains(out, "without the Kubernetes client") {
		t.Errorf("render for scheduler k8s in a lite build: %v\n%s", err, out)
	}
}
