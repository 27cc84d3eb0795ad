package analysis

import (
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/gpuhealth"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/testrun"
)

// The ledger counts failures outside the test, now and in earlier
// attempts, and never a cell that was still running or queued when it was
// collected, even one an older kvsweep stored as MISSING (RUNNING) [infra];
// history.InfraFailure, which the stores' queries select by, agrees.
func TestBadNodesLeaveUnfinishedCellsOut(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	infra := func(state, node string) testrun.CellResult {
		return testrun.CellResult{Outcome: testrun.Missing, Class: testrun.ClassInfra, State: state, Nodes: node}
	}
	retried := testrun.CellResult{Outcome: testrun.OK, Nodes: "n3",
		Earlier: []testrun.Attempt{{State: "PREEMPTED", Nodes: "n2", Class: testrun.ClassInfra}}}
	run := &testrun.Run{ID: "s1", CollectedAt: at, Cells: []testrun.CellResult{
		infra("NODE_FAIL", "n1"), infra("RUNNING", "n4"), infra("PENDING", "n4"), infra("SUBMITTED", "n4"),
		{Outcome: testrun.NotFinished, State: "RUNNING", Nodes: "n4"}, retried,
	}}
	ledger := BadNodes([]*testrun.Run{run}, time.Time{})
	var nodes []string
	for _, n := range ledger {
		nodes = append(nodes, n.Node)
	}
	if len(nodes) != 2 || nodes[0] != "n1" || nodes[1] != "n2" {
		t.Errorf("ledger nodes %v, want [n1 n2]", nodes)
	}
	for i, c := range run.Cells {
		want := i == 0 || i == 5
		if got := history.InfraFailure(c); got != want {
			t.Errorf("InfraFailure(%s on %s, %s) = %v, want %v", c.Outcome, c.Nodes, c.State, got, want)
		}
	}
}

// A GPU fault is counted against the node whose GPUs failed (the
// report's node, not the cell's node list), as GPU_FAULT with the
// counters that rose, in an earlier attempt and in the last one.
func TestBadNodesGPUFaults(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	fault := func(node string, counters ...string) *gpuhealth.Report {
		r := &gpuhealth.Report{Node: node}
		for _, c := range counters {
			r.Changes = append(r.Changes, gpuhealth.Change{Counter: c, Before: 0, After: 1, Fault: true})
		}
		return r
	}
	run := &testrun.Run{ID: "s1", CollectedAt: at, Cells: []testrun.CellResult{
		{Outcome: testrun.OK, Nodes: "n2", Earlier: []testrun.Attempt{{State: "COMPLETED", Nodes: "n1", Class: testrun.ClassInfra, GPUFault: fault("n1", "xid", "nvlink.replay_errors")}}},
		{Outcome: testrun.Invalid, Class: testrun.ClassInfra, State: "COMPLETED", Nodes: "n[1-2]", Health: fault("n1", "nvlink.replay_errors")},
		{Outcome: testrun.OK, Nodes: "n3", Health: &gpuhealth.Report{Node: "n3", Changes: []gpuhealth.Change{{Counter: "ecc_errors.volatile.sram_correctable", After: 2}}}},
	}}
	ledger := BadNodes([]*testrun.Run{run}, time.Time{})
	if len(ledger) != 1 || ledger[0].Node != "n1" || ledger[0].Failures != 2 || ledger[0].States[GPUFault] != 2 ||
		ledger[0].GPUCounters["nvlink.replay_errors"] != 2 || ledger[0].GPUCounters["xid"] != 1 || len(ledger[0].GPUCounters) != 2 {
		t.Errorf("ledger %+v", ledger)
	}
	for i, c := range run.Cells {
		if got := history.InfraFailure(c); got != (i < 2) {
			t.Errorf("InfraFailure(cell %d) = %v", i, got)
		}
	}
}
