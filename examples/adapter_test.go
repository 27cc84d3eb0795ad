package examples_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/result"
)

// adapt runs the shipped log adapter on a log, as the job does, and
// returns the result.json it wrote, its stderr and exit status.
func adapt(t *testing.T, log string) (string, string, int) {
	t.Helper()
	cell := t.TempDir()
	cmd := exec.Command("python3", "harness/phase1_log_adapter.py", "--log", filepath.Join("harness", "testdata", log), cell)
	cmd.Env = append(os.Environ(), "KVSWEEP_CELL_ID=0123456789ab", "KVSWEEP_SWEEP_ID=adapter-test")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(cell, "result.json"))
	return string(b), stderr.String(), code
}

// The adapter reads the seed's log lines into result.json v1: the figures
// of each case, not those of the noise around them; a missing line leaves
// its metric out (never a zero); the file is valid v1.
func TestLogAdapter(t *testing.T) {
	for _, log := range []string{"noisy.log", "missing.log"} {
		t.Run(log, func(t *testing.T) {
			out, stderr, code := adapt(t, log)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			golden.Check(t, filepath.Join("harness", "testdata", strings.TrimSuffix(log, ".log")+".result.json"), []byte(out))
			if _, err := result.ParseResult([]byte(out)); err != nil {
				t.Errorf("not a valid result.json: %v", err)
			}
		})
	}
}

// A figure that is not a number stops the adapter with the line and the
// value; it writes no result (the cell is then INVALID, naming it).
func TestLogAdapterMalformed(t *testing.T) {
	out, stderr, code := adapt(t, "malformed.log")
	if code != 2 || out != "" {
		t.Fatalf("exit %d, result %q", code, out)
	}
	if want := "line 1: replacement_serving_s: '8x2' is not a number"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}
