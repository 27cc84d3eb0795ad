package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
