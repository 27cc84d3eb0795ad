package testrun

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/result"
)

// Verdicts collect gives a case where the cell's result and its plan
// disagree. Both fail the cell (class test), collect and every gate: a
// harness that ignores --cases, or names TC-1 what the spec calls TC-01,
// must never pass for one that ran the plan.
const (
	// NotReported: the cell planned the case, but its result has no such
	// case. Collect adds it to the cell's cases, saying what the result
	// reported instead.
	NotReported = "NOT_REPORTED"
	// Unplanned: the result reports a case the cell did not plan. The
	// case keeps its metrics; its message says what the harness said of
	// it and what the cell planned.
	Unplanned = "UNPLANNED"
)

// maxNamed bounds the case ids a message lists.
const maxNamed = 8

// reconcileCases holds a cell's reported cases to its planned ones: each
// planned case the result does not report is added as NOT_REPORTED, and
// each reported case the cell did not plan becomes UNPLANNED. A cell
// that plans no case (a spec without a case axis) is held to nothing.
func reconcileCases(cr *CellResult) {
	if len(cr.Planned) == 0 {
		return
	}
	reported := make([]string, 0, len(cr.Cases))
	for _, cs := range cr.Cases {
		reported = append(reported, cs.ID)
	}
	for i := range cr.Cases {
		cs := &cr.Cases[i]
		if slices.Contains(cr.Planned, cs.ID) {
			continue
		}
		msg := fmt.Sprintf("result.json reported it (%s), but the cell planned no such case (it planned %s)", cs.Verdict, idList(cr.Planned))
		if cs.Message != "" {
			msg += "; its message: " + cs.Message
		}
		cs.Verdict, cs.Message = Unplanned, msg
	}
	for _, id := range cr.Planned {
		if !slices.Contains(reported, id) {
			cr.Cases = append(cr.Cases, result.Case{ID: id, Verdict: NotReported, Message: notReportedMessage(reported)})
		}
	}
}

// notReportedMessage says that a planned case is not in the result and
// what the result reported instead.
func notReportedMessage(reported []string) string {
	if len(reported) == 0 {
		return "planned, but result.json has no such case (it reported no case)"
	}
	return "planned, but result.json has no such case (it reported " + idList(reported) + ")"
}

// idList is "TC-1, TC-2, TC-3", the first maxNamed of ids and how many
// more.
func idList(ids []string) string {
	if len(ids) <= maxNamed {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxNamed], ", "), len(ids)-maxNamed)
}

// CaseProblem is a case of a cell whose result and plan disagree.
type CaseProblem struct {
	Cell, CellID, Case string
	Verdict            string // NotReported or Unplanned
	Message            string
}

// String is "CELL TC-02: planned, but result.json has no such case (...)".
func (p CaseProblem) String() string { return p.Cell + " " + p.Case + ": " + p.Message }

// CaseProblems lists, cell by cell, the cases a result did not report
// although the cell planned them, and those it reported that the cell did
// not plan. A cell with a result read by an earlier kvsweep, which added
// no NOT_REPORTED case, counts its planned cases without a verdict too.
func (c CellResult) CaseProblems() []CaseProblem {
	var out []CaseProblem
	has := map[string]bool{}
	for _, cs := range c.Cases {
		has[cs.ID] = true
		if cs.Verdict == NotReported || cs.Verdict == Unplanned {
			out = append(out, CaseProblem{Cell: c.Name, CellID: c.CellID, Case: cs.ID, Verdict: cs.Verdict, Message: cs.Message})
		}
	}
	if c.Outcome != OK {
		return out
	}
	for _, id := range c.Planned {
		if !has[id] {
			out = append(out, CaseProblem{Cell: c.Name, CellID: c.CellID, Case: id, Verdict: NotReported, Message: "planned, but the result has no such case"})
		}
	}
	return out
}

// CaseProblems is every cell's CaseProblems, in the run's order.
func (r *Run) CaseProblems() []CaseProblem {
	var out []CaseProblem
	for _, c := range r.Cells {
		out = append(out, c.CaseProblems()...)
	}
	return out
}
