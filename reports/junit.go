package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// JUnit XML in the Apache Ant format, which Jenkins and the GitHub test
// reporters read: one testsuite per run, one testcase per cell and case;
// each case's metrics are properties of the suite ("CELL/CASE/METRIC").
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Package    string          `xml:"package,attr"`
	ID         int             `xml:"id,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// junitTime is the run's start without time zone, as the format wants.
func junitTime(r *testrun.Run) string { return r.Date().Format("2006-01-02T15:04:05") }

// WriteJUnit renders runs as JUnit XML.
func WriteJUnit(w io.Writer, runs ...*testrun.Run) error {
	return encodeJUnit(w, runSuites(runs))
}

// runSuites is a testsuite per run: a testcase per cell and case.
func runSuites(runs []*testrun.Run) junitSuites {
	var root junitSuites
	for i, r := range runs {
		s := junitSuite{Name: r.ID, Package: "kvsweep." + r.Name, ID: i, Timestamp: junitTime(r), Hostname: "localhost"}
		total := 0.0
		cases := testrun.CaseIDs(r)
		for _, c := range r.Cells {
			byID := map[string]result.Case{}
			for _, cs := range c.Cases {
				byID[cs.ID] = cs
			}
			for i, v := range cellVerdicts(c, cases) {
				if v == "–" {
					continue
				}
				cs := byID[cases[i]]
				tc := junitCase{Name: cases[i], Classname: r.Name + "." + c.Name, Time: strconv.FormatFloat(cs.DurationS, 'f', 3, 64)}
				total += cs.DurationS
				for _, m := range cs.Metrics {
					s.Properties = append(s.Properties, junitProperty{Name: c.Name + "/" + cases[i] + "/" + m.Name, Value: strings.TrimSpace(num(m.Value) + " " + m.Unit)})
				}
				// A test failure is a failure; one outside the test (the
				// node, the scheduler, the image) is an error.
				msg := junitMessage(c, cs, v)
				switch {
				case v == result.Pass:
				case v == result.Skip:
					tc.Skipped = &junitProblem{Message: cs.Message}
					s.Skipped++
				case c.Class == testrun.ClassInfra:
					tc.Error = &junitProblem{Message: msg, Type: v, Text: msg}
					s.Errors++
				default:
					tc.Failure = &junitProblem{Message: msg, Type: v, Text: msg}
					s.Failures++
				}
				s.Tests++
				s.Cases = append(s.Cases, tc)
			}
			if c.Outcome != testrun.OK {
				s.SystemErr += fmt.Sprintf("%s (%s): %s\n", c.Name, c.CellID, testrun.OutcomeText(c))
			}
		}
		s.Time = strconv.FormatFloat(total, 'f', 3, 64)
		s.SystemOut = fmt.Sprintf("sweep %s: %d cells: %s\n", r.ID, len(r.Cells), r.CountsLine())
		for _, n := range r.Notes {
			s.Properties = append(s.Properties, junitProperty{Name: "note", Value: n.String()})
			s.SystemOut += "note: " + n.String() + "\n"
		}
		s.SystemOut += junitAttachments(r)
		root.Suites = append(root.Suites, s)
	}
	return root
}

// encodeJUnit writes the suites as one XML document.
func encodeJUnit(w io.Writer, root junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitMessage says what happened to case cs (verdict v) of cell c: its
// message, then the cell's outcome when the cell has no valid result.
// A case of a valid result without a message says its verdict, never
// the cell's "OK": a planned case the result lacks says so.
func junitMessage(c testrun.CellResult, cs result.Case, v string) string {
	switch {
	case c.Outcome != testrun.OK:
		return strings.TrimSpace(cs.Message + " " + testrun.OutcomeText(c))
	case cs.Message != "":
		return cs.Message
	case v == testrun.NotReported:
		return "planned, but the result has no such case"
	}
	return "the harness said " + v
}

// writeComparisonJUnit renders a comparison as one testsuite.
func writeComparisonJUnit(w io.Writer, c *analysis.Comparison) error {
	return encodeJUnit(w, junitSuites{Suites: []junitSuite{comparisonSuite(c)}})
}

// comparisonSuite is a comparison's testsuite: a testcase per compared
// cell and case, failing on a verdict that got worse or a metric
// regression, and one per baseline cell or case the candidate lacks.
func comparisonSuite(c *analysis.Comparison) junitSuite {
	s := junitSuite{Name: c.Candidate + " vs " + c.Baseline, Package: "kvsweep.compare", Hostname: "localhost", Time: "0",
		Timestamp: c.CollectedAt().UTC().Format("2006-01-02T15:04:05")}
	type key struct{ cell, cs string }
	var order []key
	problems := map[key][]string{}
	see := func(k key, problem string) {
		if _, ok := problems[k]; !ok {
			order = append(order, k)
			problems[k] = nil
		}
		if problem != "" {
			problems[k] = append(problems[k], problem)
		}
	}
	for _, v := range c.Verdicts {
		p := ""
		if v.Worse {
			p = fmt.Sprintf("verdict %s -> %s", v.Baseline, v.Candidate)
		}
		see(key{v.Cell, v.Case}, p)
	}
	for _, m := range c.Metrics {
		p := ""
		if m.Regression {
			p = fmt.Sprintf("%s %s -> %s %s (%+.2f%%, %s)", m.Metric, num(m.BaselineMed), num(m.CandidateMed), m.Unit, m.DeltaPct, m.Significance)
			s.Properties = append(s.Properties, junitProperty{Name: m.Cell + "/" + m.Case + "/" + m.Metric, Value: fmt.Sprintf("%+.2f%%", m.DeltaPct)})
		}
		see(key{m.Cell, m.Case}, p)
	}
	for _, cell := range c.OnlyInBaseline {
		see(key{cell, "(cell)"}, "the candidate lacks this baseline cell")
	}
	for _, mc := range c.MissingCases {
		cell, cs, _ := strings.Cut(mc, " ")
		see(key{cell, cs}, "the candidate lacks this baseline case")
	}
	for _, k := range order {
		tc := junitCase{Name: k.cs, Classname: "compare." + k.cell, Time: "0"}
		if ps := problems[k]; len(ps) > 0 {
			msg := strings.Join(ps, "; ")
			tc.Failure = &junitProblem{Message: msg, Type: "REGRESSION", Text: msg}
			s.Failures++
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	s.SystemOut = c.Summary() + "\n"
	return s
}

// junitAttachments lists each cell's evidence as the attachments CI test
// reporters read from system-out ([[ATTACHMENT|PATH]], absolute paths):
// only regular files inside the cell's directory, as the markdown
// summary shows them. A reporter archives what an attachment names, so a
// symbolic link (it would follow it out of the sweep), a pipe, a missing
// file, or any file of a run whose sweep directory is not known, is
// written as text saying what it is, never attached.
func junitAttachments(r *testrun.Run) string {
	var b strings.Builder
	base := ""
	if r.Dir != "" {
		base, _ = filepath.Abs(r.Dir)
	}
	for _, c := range r.Cells {
		if len(c.Evidence) == 0 {
			continue
		}
		fmt.Fprintf(&b, "evidence of %s (%s):\n", c.Name, c.CellID)
		for _, e := range r.EvidenceOf(c) {
			switch {
			case base == "":
				fmt.Fprintf(&b, "%s (not attached: the run's sweep directory is not known)\n", e.Path)
			case e.Problem != "":
				fmt.Fprintf(&b, "%s (not attached: %s)\n", e.Path, e.Problem)
			default:
				fmt.Fprintf(&b, "[[ATTACHMENT|%s]]\n", filepath.Join(base, filepath.FromSlash(e.Path)))
			}
		}
	}
	return b.String()
}
