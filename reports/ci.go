package reports

import (
	"io"
	"strings"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/testrun"
)

// WriteCIJUnit renders what kvsweep ci judged as one JUnit document: the
// run's testsuite (as WriteJUnit writes it) and, with a comparison, the
// comparison's (as its JUnit), so a regression, a verdict that got worse
// and a baseline cell or case the candidate lost each fail a testcase, as
// a failed case does. gates is the gates' refusal (nil when they hold):
// when the gates failed and neither suite has a failure or an error to
// show it (a gate on provenance, nothing to check), a last suite's one
// testcase fails with the gates' reasons, so the file is never green on
// a job that is red.
func WriteCIJUnit(w io.Writer, run *testrun.Run, cmp *analysis.Comparison, gates error) error {
	root := runSuites([]*testrun.Run{run})
	if cmp != nil {
		s := comparisonSuite(cmp)
		s.ID = len(root.Suites)
		root.Suites = append(root.Suites, s)
	}
	red := 0
	for _, s := range root.Suites {
		red += s.Failures + s.Errors
	}
	if gates != nil && red == 0 {
		msg := gatesReasons(gates)
		root.Suites = append(root.Suites, junitSuite{Name: run.ID + " gates", Package: "kvsweep.ci", ID: len(root.Suites),
			Timestamp: junitTime(run), Hostname: "localhost", Tests: 1, Failures: 1, Time: "0",
			Cases: []junitCase{{Name: "gates", Classname: "ci." + run.Name, Time: "0",
				Failure: &junitProblem{Message: msg, Type: "GATES", Text: msg}}},
			SystemOut: msg + "\n"})
	}
	return encodeJUnit(w, root)
}

// gatesLineMax bounds the step summary's first line: the gates name at
// most three examples of each reason, but a harness's message in one can
// be long.
const gatesLineMax = 4096

// GatesLine is the line a CI job's step summary opens with, its verdict:
// "Gates: passed", or "Gates: FAILED: " and the gates' reasons (gates is
// their refusal, nil when they hold); then alone, when set, saying why
// nothing was compared ("No baseline on main: this run is reported
// alone"). It is one markdown line whatever a harness's message in it
// holds, at most gatesLineMax bytes and a newline.
func GatesLine(gates error, alone string) string {
	line := "Gates: passed"
	if gates != nil {
		line = "Gates: FAILED: " + gatesReasons(gates)
	}
	if alone != "" {
		line += ". " + alone
	}
	line = table.Visible(line)
	if len(line) > gatesLineMax {
		cut := strings.LastIndexByte(line[:gatesLineMax-len(" ...")], ' ')
		line = line[:max(cut, 0)] + " ..."
	}
	return line + "\n"
}

// gatesReasons is the gates' refusal without its "check failed: ".
func gatesReasons(gates error) string {
	return strings.TrimPrefix(gates.Error(), "check failed: ")
}
