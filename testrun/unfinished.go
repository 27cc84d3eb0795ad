package testrun

import (
	"fmt"
	"slices"
	"strings"
)

// NotFinished is the outcome of a cell whose job had not ended when the
// sweep was collected: it was still queued or running. It is neither a
// test failure nor one outside the test, and a run with such a cell is
// not written or stored (history.CollectDir): collecting again once it
// has ended gives it its outcome.
const NotFinished = "NOT_FINISHED"

// UnfinishedStates are the scheduler states of a job that has not ended
// yet (in the scheduler's vocabulary): running, queued, submitted but not
// yet shown, suspended, or requeued to run again.
var UnfinishedStates = []string{"RUNNING", "PENDING", "SUBMITTED", "SUSPENDED", "REQUEUED"}

// Unfinished reports whether a cell in the scheduler state state has not
// ended yet. Such a cell never counts as a failure outside the test, nor
// in the bad-node ledger: whatever it is waiting for, its node did not
// fail it.
func Unfinished(state string) bool { return slices.Contains(UnfinishedStates, state) }

// Unfinished is how many cells of the run had not finished when it was
// collected (outcome NotFinished), by state, as "1 RUNNING, 1 PENDING"
// (the states in the order UnfinishedStates lists them); 0 and "" when
// every cell had ended.
func (r *Run) Unfinished() (int, string) {
	byState := map[string]int{}
	n := 0
	for _, c := range r.Cells {
		if c.Outcome == NotFinished {
			byState[c.State]++
			n++
		}
	}
	var parts []string
	for _, s := range UnfinishedStates {
		if byState[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", byState[s], s))
		}
	}
	return n, strings.Join(parts, ", ")
}
