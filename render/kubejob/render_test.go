package kubejob_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/render/kubejob"
	"github.com/kvsweep/kvsweep/sweep"
)

// renderSpec renders spec src (HOSTPATH replaced by a directory of the test's)
// into a sweep directory on that volume.
func renderSpec(t *testing.T, src string) (dir, vol string, m *sweep.Manifest, err error) {
	t.Helper()
	vol = t.TempDir()
	src = strings.ReplaceAll(src, "HOSTPATH", vol)
	path := filepath.Join("testdata", "k8s.yaml")
	spec, cells, err := matrix.ParseCells(path, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(vol, "sw")
	m, err = render.Render(spec, []byte(src), cells, dir, render.Options{SweepID: "golden-k8s", Binary: "/bin/true",
		Objects: func(s *matrix.Spec, m *sweep.Manifest, j sweep.Job) ([]byte, error) {
			return kubejob.Render(s, m, j, kubejob.Options{SpecDir: "testdata"})
		}})
	return dir, vol, m, err
}

func spec(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/k8s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The Job and the script of every topology kind, as a cluster is asked to
// run them: one Indexed Job per topology, a Job of two pods per two-node
// cell; overlays applied.
func TestGoldenJobs(t *testing.T) {
	dir, vol, m, err := renderSpec(t, spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Jobs) != 4 {
		t.Fatalf("%d jobs, want one per topology", len(m.Jobs))
	}
	for _, j := range m.Jobs {
		for _, rel := range []string{j.Object, j.Script} {
			got, err := os.ReadFile(filepath.Join(dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			got = bytes.ReplaceAll(got, []byte(vol), []byte("/srv/sweeps"))
			golden.Check(t, filepath.Join("testdata", "golden", filepath.Base(rel)), got)
		}
		if sc, err := exec.LookPath("shellcheck"); err == nil {
			if out, err := exec.Command(sc, "-s", "bash", filepath.Join(dir, j.Script)).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", j.Script, err, out)
			}
		} else {
			t.Fatal("shellcheck is not installed (the README's test command installs it)")
		}
	}
}

// What a spec cannot ask of the renderer is refused, saying where.
func TestRenderRefusals(t *testing.T) {
	base := spec(t)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"pass without a secret", "secrets: {HF_TOKEN: hf-token/token}", "secrets: {OTHER: s/k}",
			"env.pass HF_TOKEN: the pods of a Kubernetes Job do not see the environment"},
		{"overlay missing", "overlay-env.json]", "nope.yaml]", "kubernetes.overlays: open testdata/nope.yaml"},
		{"overlay breaks the Job", "overlay-env.json]", "../testdata/k8s.yaml]", "the Job of aggregated is no longer a Job"},
		{"overlay not a file", "overlay-env.json]", "fifo]", "fifo is a named pipe, not a regular file"},
		{"off the volume", "volume: {host_path: HOSTPATH}", "volume: {host_path: /srv/elsewhere}",
			"testdata/k8s.yaml:9:11: kubernetes.volume: the sweep directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("the spec has no %q", tc.old)
			}
			src := strings.Replace(base, tc.old, tc.new, 1)
			if tc.new == "fifo]" {
				// A FIFO among the overlays: refused, not waited on.
				fifo := filepath.Join("testdata", "fifo")
				if err := syscall.Mkfifo(fifo, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(fifo) })
			}
			_, _, _, err := renderSpec(t, src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// The spec's kubernetes section is checked where it is written.
func TestSpecRefusals(t *testing.T) {
	base := spec(t)
	for _, tc := range []struct{ old, new, want string }{
		{"namespace: kvcr-tests", "namespace: Kvcr_Tests", `testdata/k8s.yaml:8:14: kubernetes.namespace: "Kvcr_Tests" is not a namespace name`},
		{"volume: {host_path: HOSTPATH}", "volume: {host_path: relative/dir}", `kubernetes.volume.host_path: "relative/dir" is not an absolute path`},
		{"volume: {host_path: HOSTPATH}", "volume: {claim: sweeps}", "a claim needs path"},
		{"volume: {host_path: HOSTPATH}", "volume: {}", "expected claim (a PersistentVolumeClaim) or host_path"},
		{"secrets: {HF_TOKEN: hf-token/token}", "secrets: {HF_TOKEN: hf-token}", `kubernetes.secrets.HF_TOKEN: "hf-token" is not SECRET/KEY`},
		{"operator: Exists", "operator: Maybe", `kubernetes.tolerations[0].operator: unknown value "Maybe"`},
		{"  namespace: kvcr-tests\n", "  namespace: kvcr-tests\n  pods: 3\n", `unknown key "pods"`},
	} {
		t.Run(tc.new, func(t *testing.T) {
			src := strings.Replace(base, tc.old, tc.new, 1)
			_, _, err := matrix.ParseCells("testdata/k8s.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	_, _, err := matrix.ParseCells("k8s.yaml", []byte(strings.Replace(base, "kubernetes:", "kubernetes_off:", 1)))
	if err == nil || !strings.Contains(err.Error(), `missing required key "kubernetes"`) {
		t.Errorf("scheduler k8s without a kubernetes section: %v", err)
	}
}
