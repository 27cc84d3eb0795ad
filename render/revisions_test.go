package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
)

// The cells of each revision set run in jobs of their own, in the set's
// image, expecting its commits.
func TestRevisionJobs(t *testing.T) {
	src := []byte(`version: 1
name: stack
container: {runtime: pyxis, image: "r.example.com/kvcr:unused"}
harness: {command: [/opt/kvcr/run.sh]}
topologies: {aggregated: {}}
geometries: {g: {}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-06], revision: [pr-1, pr-2]}
`)
	d1 := "r.example.com/stack:rev-pr-1@sha256:" + strings.Repeat("1", 64)
	d2 := "r.example.com/stack:rev-pr-2@sha256:" + strings.Repeat("2", 64)
	dir, m := renderSpec(t, filepath.Join(t.TempDir(), "spec.yaml"), src, Options{Revisions: map[string]RevisionImage{
		"pr-1": {Image: d1, Expect: map[string]string{"kvcr": strings.Repeat("a", 40)}},
		"pr-2": {Image: d2, Expect: map[string]string{"kvcr": strings.Repeat("b", 40)}},
	}})
	if len(m.Jobs) != 2 {
		t.Fatalf("%d jobs, want one per revision", len(m.Jobs))
	}
	for i, rev := range []struct{ name, image, commit string }{{"pr-1", d1, "a"}, {"pr-2", d2, "b"}} {
		j := m.Jobs[i]
		if j.Name != "aggregated-"+rev.name || j.Image != rev.image || j.Expect["kvcr"] != strings.Repeat(rev.commit, 40) {
			t.Errorf("job %d: %s %s %v", i, j.Name, j.Image, j.Expect)
		}
		script, err := os.ReadFile(filepath.Join(dir, j.Script))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(script), rev.image) || !strings.Contains(string(script), strings.Repeat(rev.commit, 40)) {
			t.Errorf("the script of %s does not run %s expecting its commit", j.Name, rev.image)
		}
	}
}

// A two-node placement: the head's services and the remote's, a
// --remote-worker per remote worker and the GPU map, on Slurm and in the
// pods of Kubernetes.
func TestTwoNodePlacement(t *testing.T) {
	for _, sched := range []string{"slurm", "k8s"} {
		src := []byte(`version: 1
name: placed
scheduler: ` + sched + `
kubernetes: {volume: {host_path: ` + os.TempDir() + `}}
container: {runtime: pyxis, image: "r.example.com/kvcr:1@sha256:` + strings.Repeat("1", 64) + `"}
harness: {command: [/opt/kvcr/run.sh]}
topologies:
  two-node-2p1d:
    kind: two-node
    resources: {nodes: 2, gpus_per_node: 1}
    agent: [agent]
    service: [svc]
    placement: {head: [0, 1], remote: [2], gpus: [0, 0, 0]}
geometries: {g: {}}
matrix: {engine: [vllm], topology: [two-node-2p1d], geometry: [g], case: [TC-06]}
`)
		if sched == "k8s" {
			src = []byte(strings.Replace(string(src), "runtime: pyxis, ", "", 1))
		}
		objects := func(*matrix.Spec, *sweep.Manifest, sweep.Job) ([]byte, error) { return []byte("{}\n"), nil }
		dir, m := renderSpec(t, filepath.Join(t.TempDir(), "spec.yaml"), src, Options{Objects: objects})
		script, err := os.ReadFile(filepath.Join(dir, m.Jobs[0].Script))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"start_services head 0 1\n", "start_services remote 2", `run_harness "${ARGV[@]}" --gpus 0,0,0 --remote-worker "2=$KVSWEEP_AGENT_URL"` + "\n"} {
			if !strings.Contains(string(script), want) {
				t.Errorf("%s: the script lacks %q", sched, want)
			}
		}
	}
}
