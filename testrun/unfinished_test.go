package testrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/sweep"
)

// A cell whose job has not ended (no exit marker, the scheduler says
// RUNNING or PENDING) is NOT_FINISHED, whatever it has written so far,
// and never a failure outside the test; a cell the scheduler still shows
// RUNNING after its job wrote its exit marker has ended (the scheduler
// lags), and a missing result is then the test's.
func TestUnfinishedCells(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	m, err := sweep.ReadManifest(dir)
	sweeptest.Must(t, err)
	states := sweeptest.States(t, dir)
	ids := map[string]string{}
	for _, c := range m.Cells {
		ids[c.Name] = c.ID
	}
	running, queued, lagging := ids["vllm-aggregated-qwen3.5-4b-sim-no-result"], ids["vllm-aggregated-qwen3.5-4b-sim-pass"], ids["vllm-aggregated-qwen3.5-4b-sim-garbage"]
	for id, state := range map[string]string{running: "RUNNING", queued: "PENDING", lagging: "RUNNING"} {
		st := states[id]
		st.State = state
		states[id] = st
	}
	for _, id := range []string{running, queued} {
		sweeptest.Must(t, os.Remove(filepath.Join(dir, sweep.CellsDir, id, "exit")))
	}
	sweeptest.Must(t, os.Remove(filepath.Join(dir, sweep.CellsDir, lagging, "result.json")))
	run, err := Collect(dir, CollectOptions{States: states, Now: sweeptest.Now})
	sweeptest.Must(t, err)
	for _, c := range run.Cells {
		switch c.CellID {
		case running, queued:
			if c.Outcome != NotFinished || c.Class != "" || c.Detail != "not finished ("+c.State+")" {
				t.Errorf("%s: %s %q class %q, want NOT_FINISHED, no class", c.Name, c.Outcome, c.Detail, c.Class)
			}
		case lagging:
			if c.Outcome != Missing || c.Class != ClassTest {
				t.Errorf("%s: %s class %q, want MISSING of the test", c.Name, c.Outcome, c.Class)
			}
		}
	}
	if n, states := run.Unfinished(); n != 2 || states != "1 RUNNING, 1 PENDING" {
		t.Errorf("Unfinished() = %d, %q; want 2, \"1 RUNNING, 1 PENDING\"", n, states)
	}
	if run.Complete() {
		t.Error("a run with cells not finished is complete")
	}
	if n, _ := collected(t, "mixed").Unfinished(); n != 0 {
		t.Errorf("a sweep that ended has %d cells not finished", n)
	}
}
