package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With telemetry the job samples the GPUs beside the scraper (every 2s
// by default, or the spec's interval); gpu: off leaves it out.
func TestGPUSampling(t *testing.T) {
	base, err := os.ReadFile("testdata/all-topologies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ telemetry, want string }{
		{"telemetry: {interval: 5s}", "job gpu-sample --interval 2000ms --out \"$CELL_DIR/gpu.jsonl\""},
		{"telemetry: {gpu: {interval: 500ms}}", "job gpu-sample --interval 500ms --out \"$CELL_DIR/gpu.jsonl\""},
		{"telemetry: {gpu: off}", ""},
		{"", ""},
	} {
		src := strings.Replace(string(base), "runtime: RUNTIME", "runtime: none", 1) + "\n" + c.telemetry + "\n"
		dir, m := renderSpec(t, "all-topologies.yaml", []byte(src), Options{SweepID: "gpu"})
		b, err := os.ReadFile(filepath.Join(dir, m.Jobs[0].Script))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "gpu-sample"); got != (c.want != "") || !strings.Contains(string(b), c.want) {
			t.Errorf("%q: gpu-sample in the script: %v, want %q", c.telemetry, got, c.want)
		}
		shellcheck(t, filepath.Join(dir, m.Jobs[0].Script))
	}
}
