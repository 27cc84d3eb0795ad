package testrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/sweep"
)

// A cell that ran under emulation keeps its verdicts, says so, and its
// timings (QEMU's) are never compared or gated; a node of another
// platform refused before the harness is NOT_STARTED, an infra failure
// naming both platforms.
func TestCollectPlatform(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	m, err := sweep.ReadManifest(dir)
	sweeptest.Must(t, err)
	ids := map[string]string{}
	for _, c := range m.Cells {
		ids[c.Name] = c.ID
	}
	pass, other := ids["vllm-aggregated-qwen3.5-4b-sim-pass"], ids["vllm-aggregated-qwen3.5-4b-sim-exit-3"]
	if pass == "" || other == "" {
		t.Fatalf("the committed sweep lacks its cells: %v", ids)
	}
	sweeptest.Must(t, os.WriteFile(filepath.Join(dir, "cells", pass, sweep.EmulatedFile), []byte("linux/arm64 on x86_64\n"), 0o644))
	sweeptest.Must(t, os.WriteFile(filepath.Join(dir, "cells", other, sweep.PlatformMismatchFile),
		[]byte("image linux/arm64, node x86_64\n"), 0o644))
	run, err := Collect(dir, CollectOptions{})
	sweeptest.Must(t, err)
	for _, c := range run.Cells {
		switch c.CellID {
		case pass:
			if c.Emulated != "linux/arm64 on x86_64" || !c.VerdictsOnly || c.Outcome != OK {
				t.Errorf("the emulated cell: emulated %q, verdicts only %v, outcome %s", c.Emulated, c.VerdictsOnly, c.Outcome)
			}
		case other:
			if c.Outcome != NotStarted || c.Detail != "the node is not of the image's platform: image linux/arm64, node x86_64" {
				t.Errorf("the refused cell: %s %q", c.Outcome, c.Detail)
			}
		default:
			if c.Emulated != "" || c.VerdictsOnly {
				t.Errorf("%s: emulated %q, verdicts only %v", c.Name, c.Emulated, c.VerdictsOnly)
			}
		}
	}
}
