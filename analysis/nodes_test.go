package analysis

import (
	"testing"
	"time"

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
