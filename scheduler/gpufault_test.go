package scheduler

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

// A cell that completed, but whose GPUs failed under it (the job left
// gpu-fault), failed outside the test: watch retries it away from the
// node it ran on and from every node its GPUs failed under it on; a
// cancelled one, one still running and one without the file are not.
func TestGPUFaultIsInfra(t *testing.T) {
	dir := t.TempDir()
	cell := filepath.Join(dir, sweep.CellsDir, "c1")
	if err := os.MkdirAll(cell, 0o755); err != nil {
		t.Fatal(err)
	}
	c := CellStatus{ID: "c1", TaskState: sweep.TaskState{State: StateCompleted, Nodes: "n2"}}
	if InfraFailure(dir, c) {
		t.Fatal("a completed cell without gpu-fault is an infra failure")
	}
	fault := `{"node":"n1","job_id":"7","changes":[{"gpu":0,"counter":"xid","before":0,"after":1,"fault":true}]}` + "\n"
	for name, text := range map[string]string{sweep.HealthFaultFile: fault, sweep.HealthFaultsLog: fault + `{"node":"n2"}` + "\n" + "not json\n"} {
		if err := os.WriteFile(filepath.Join(cell, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !InfraFailure(dir, c) {
		t.Error("a completed cell with gpu-fault is no infra failure")
	}
	for _, st := range []string{StateCancelled, StateRunning, StatePending} {
		if InfraFailure(dir, CellStatus{ID: "c1", TaskState: sweep.TaskState{State: st}}) {
			t.Errorf("a %s cell with gpu-fault is an infra failure", st)
		}
	}
	if got := failedNodes(c, sweep.GPUFaultNodes(dir, "c1")); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("nodes to avoid = %v, want n1 and n2", got)
	}
	if got := Select(dir, []CellStatus{c}, Selection{Infra: true}); !got["c1"] {
		t.Errorf("resubmit --infra does not choose it: %v", got)
	}
}
