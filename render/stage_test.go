package render

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kvsweep/kvsweep/matrix"
)

// stageScript is the job script's staging, as rendered, driven by a shell
// whose import stand-in records each call and writes the file in two
// halves (a marker file between them stops it there, killed).
func stageScript(t *testing.T, staging string) string {
	t.Helper()
	tmpl, err := loadTemplates("")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, "stage", ScriptData{Container: matrix.Container{Staging: staging}}); err != nil {
		t.Fatal(err)
	}
	return `set -euo pipefail
SWEEP_DIR=$1 IMAGE=$2 NODE_NAME=node
import_test() {
	echo import >>"$SWEEP_DIR/../imports"
	printf 'first half ' >"$1"
	if [ -e "$SWEEP_DIR/../kill-import" ]; then kill -KILL $$; fi
	sleep 0.2
	printf 'second half\n' >>"$1"
}
check_test() { grep -q 'second half' "$1"; }
` + b.String() + `
stage img import_test check_test
cat "$STAGED"
echo "staged $STAGED"
`
}

func runStage(script, sweepDir, image string) (string, error) {
	cmd := exec.Command("bash", "-c", script, "stage", sweepDir, image)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Eight jobs of two sweeps start at once: one imports, the others wait
// for it and run the same file; a later sweep imports nothing.
func TestStageImportsOnce(t *testing.T) {
	base := t.TempDir()
	image := "reg.example/kvcr:1@sha256:" + strings.Repeat("ab", 32)
	script := stageScript(t, "")
	var wg sync.WaitGroup
	outs := make([]string, 8)
	errs := make([]error, 8)
	for i := range outs {
		sweepDir := filepath.Join(base, fmt.Sprintf("sweep%d", i%2))
		os.MkdirAll(sweepDir, 0o755)
		wg.Go(func() { outs[i], errs[i] = runStage(script, sweepDir, image) })
	}
	wg.Wait()
	want := filepath.Join(base, "kvsweep-images", "sha256-"+strings.Repeat("ab", 32)+".img")
	for i, out := range outs {
		if errs[i] != nil || !strings.Contains(out, "first half second half\nstaged "+want+"\n") {
			t.Errorf("job %d: %v\n%s", i, errs[i], out)
		}
	}
	if n := imports(t, base); n != 1 {
		t.Errorf("%d imports for 8 jobs, want 1", n)
	}
	os.MkdirAll(filepath.Join(base, "sweep2"), 0o755)
	if out, err := runStage(script, filepath.Join(base, "sweep2"), image); err != nil || !strings.Contains(out, "staged "+want) {
		t.Errorf("a later sweep: %v\n%s", err, out)
	}
	if n := imports(t, base); n != 1 {
		t.Errorf("a later sweep imported again: %d imports", n)
	}
	left, _ := filepath.Glob(filepath.Join(base, "kvsweep-images", ".*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// An import killed half-way leaves nothing a job runs: the job fails,
// no staged file exists, and the next job imports afresh and removes
// what the killed one left.
func TestStageKilledImport(t *testing.T) {
	base := t.TempDir()
	sweepDir := filepath.Join(base, "sweep")
	os.MkdirAll(sweepDir, 0o755)
	image := "reg.example/kvcr:1@sha256:" + strings.Repeat("cd", 32)
	staging := filepath.Join(base, "shared", "images")
	script := stageScript(t, staging)
	os.WriteFile(filepath.Join(base, "kill-import"), nil, 0o644)
	if out, err := runStage(script, sweepDir, image); err == nil {
		t.Fatalf("a killed import passed:\n%s", out)
	}
	staged := filepath.Join(staging, "sha256-"+strings.Repeat("cd", 32)+".img")
	if _, err := os.Stat(staged); err == nil {
		t.Fatal("a killed import left a staged file")
	}
	left, _ := filepath.Glob(filepath.Join(staging, ".*.tmp"))
	if len(left) != 1 {
		t.Fatalf("want the killed import's file, found %v", left)
	}
	os.Remove(filepath.Join(base, "kill-import"))
	out, err := runStage(script, sweepDir, image)
	if err != nil || !strings.Contains(out, "first half second half\nstaged "+staged) {
		t.Fatalf("after the killed import: %v\n%s", err, out)
	}
	if _, err := os.Stat(left[0]); err == nil {
		t.Errorf("the killed import's file %s is still there", left[0])
	}
	if n := imports(t, base); n != 2 {
		t.Errorf("%d imports, want 2 (the killed one and the next)", n)
	}
}

// A relative staging directory is relative to the sweep directory; an
// image not pinned by digest is not staged.
func TestStageRelativeAndUnpinned(t *testing.T) {
	base := t.TempDir()
	sweepDir := filepath.Join(base, "sweep")
	os.MkdirAll(sweepDir, 0o755)
	script := stageScript(t, "../shared")
	out, err := runStage(script, sweepDir, "reg.example/kvcr:1@sha256:"+strings.Repeat("ef", 32))
	if want := "staged " + sweepDir + "/../shared/sha256-"; err != nil || !strings.Contains(out, want) {
		t.Errorf("relative staging: %v\n%s\nwant %s", err, out, want)
	}
	out, err = runStage(script, sweepDir, "reg.example/kvcr:1")
	if err == nil || !strings.Contains(out, "reg.example/kvcr:1 is not pinned by digest: this job imports it, it is not staged") {
		t.Errorf("unpinned: %v\n%s", err, out)
	}
}

func imports(t *testing.T, base string) int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(base, "imports"))
	return strings.Count(string(b), "import\n")
}
