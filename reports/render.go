package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/internal/table"
)

// StepSummaryLimit is GitHub's limit on a job's step summary.
const StepSummaryLimit = 1 << 20

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func better(direction string) string {
	switch direction {
	case "lower":
		return "lower"
	case "higher":
		return "higher"
	}
	return ""
}

// cellVerdicts is the verdict of each case of a cell, never blank: a cell
// without a result shows its outcome in every planned case.
func cellVerdicts(c CellResult, cases []string) []string {
	got := map[string]string{}
	for _, cs := range c.Cases {
		got[cs.ID] = cs.Verdict
	}
	planned := map[string]bool{}
	for _, id := range c.Planned {
		planned[id] = true
	}
	out := make([]string, len(cases))
	for i, id := range cases {
		switch v, ok := got[id]; {
		case ok:
			out[i] = v
		case !planned[id]:
			out[i] = "–" // not part of this cell
		case c.Outcome == Missing:
			out[i] = "MISSING"
		case c.Outcome != OK:
			out[i] = c.Outcome
		default:
			out[i] = "NOT_REPORTED"
		}
	}
	return out
}

func outcomeText(c CellResult) string {
	switch c.Outcome {
	case Missing:
		return "MISSING (" + c.State + ")"
	case OK:
		return OK
	}
	return c.Outcome + ": " + c.Detail
}

// WriteSummary renders one run: the cells x cases verdict grid, then the
// metrics, in markdown, table, CSV or JSON.
func WriteSummary(w io.Writer, format string, r *Run) error {
	cases := CaseIDs(r)
	switch format {
	case "json":
		return writeJSON(w, r)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"sweep_id", "cell_id", "cell", "outcome", "detail", "case", "verdict", "metric", "value", "unit", "direction", "image_digest", "revisions"})
		for _, c := range r.Cells {
			base := []string{r.ID, c.CellID, c.Name, c.Outcome, c.Detail}
			tail := []string{c.Image.Digest, c.Image.SourceRevisions.Short()}
			verdicts := cellVerdicts(c, cases)
			byID := map[string]Case{}
			for _, cs := range c.Cases {
				byID[cs.ID] = cs
			}
			for i, id := range cases {
				if verdicts[i] == "–" {
					continue
				}
				cs := byID[id]
				if len(cs.Metrics) == 0 {
					_ = cw.Write(append(append(append([]string{}, base...), id, verdicts[i], "", "", "", ""), tail...))
					continue
				}
				for _, name := range sortedKeys(cs.Metrics) {
					m := cs.Metrics[name]
					_ = cw.Write(append(append(append([]string{}, base...), id, verdicts[i], name, num(m.Value), m.Unit, m.Direction), tail...))
				}
			}
		}
		cw.Flush()
		return cw.Error()
	case "markdown", "table":
		var b bytes.Buffer
		if format == "markdown" {
			fmt.Fprintf(&b, "## Sweep %s\n\n", r.ID)
		}
		fmt.Fprintf(&b, "%d cells: %s\n\n", len(r.Cells), r.CountsLine())
		header := append(append([]string{"cell", "outcome"}, cases...), "image", "revisions")
		rows := make([][]string, len(r.Cells))
		for i, c := range r.Cells {
			rows[i] = append(append([]string{c.Name, outcomeText(c)}, cellVerdicts(c, cases)...), ShortDigest(c.Image.Digest), c.Image.SourceRevisions.Short())
		}
		rows, cut := budget(format, rows, StepSummaryLimit/2)
		if err := table.Write(&b, table.Format(format), header, rows); err != nil {
			return err
		}
		cutNote(&b, cut)
		var mrows [][]string
		for _, c := range r.Cells {
			for _, cs := range c.Cases {
				for _, name := range sortedKeys(cs.Metrics) {
					m := cs.Metrics[name]
					mrows = append(mrows, []string{c.Name, cs.ID, name, num(m.Value), m.Unit, better(m.Direction)})
				}
			}
		}
		if len(mrows) > 0 {
			if format == "markdown" {
				b.WriteString("\n### Metrics\n")
			}
			b.WriteString("\n")
			mrows, cut := budget(format, mrows, StepSummaryLimit-b.Len()-4096)
			if err := table.Write(&b, table.Format(format), []string{"cell", "case", "metric", "value", "unit", "better"}, mrows); err != nil {
				return err
			}
			cutNote(&b, cut)
		}
		return writeLimited(w, format, b.Bytes())
	}
	return fmt.Errorf("format %q is not available for a summary (expected markdown, table, csv, json, junit or html)", format)
}

// WriteComparison renders a baseline/candidate comparison.
func WriteComparison(w io.Writer, format string, c *Comparison) error {
	switch format {
	case "json":
		return writeJSON(w, c)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"kind", "cell", "case", "metric", "baseline", "candidate", "delta_pct", "significance", "unit", "direction", "flag"})
		for _, v := range c.Verdicts {
			flag := ""
			if v.Worse {
				flag = "REGRESSION"
			}
			_ = cw.Write([]string{"verdict", v.Cell, v.Case, "", v.Baseline, v.Candidate, "", "", "", "", flag})
		}
		for _, m := range c.Metrics {
			_ = cw.Write([]string{"metric", m.Cell, m.Case, m.Metric, num(m.BaselineMed), num(m.CandidateMed),
				strconv.FormatFloat(m.DeltaPct, 'f', 2, 64), m.Significance, m.Unit, m.Direction, metricFlag(m)})
		}
		cw.Flush()
		return cw.Error()
	case "markdown", "table":
		var b bytes.Buffer
		if format == "markdown" {
			fmt.Fprintf(&b, "## %s vs %s\n\n", c.Candidate, c.Baseline)
		}
		fmt.Fprintf(&b, "%d regression(s): %d verdict change(s), %d metric(s) compared\n", c.Regressions(), len(c.Verdicts), len(c.Metrics))
		for _, k := range c.OnlyInBaseline {
			fmt.Fprintf(&b, "\nonly in the baseline: %s", k)
		}
		for _, k := range c.OnlyInCandidate {
			fmt.Fprintf(&b, "\nonly in the candidate: %s", k)
		}
		b.WriteString("\n")
		if len(c.Verdicts) > 0 {
			if format == "markdown" {
				b.WriteString("\n### Verdict changes\n")
			}
			b.WriteString("\n")
			rows := make([][]string, len(c.Verdicts))
			for i, v := range c.Verdicts {
				flag := ""
				if v.Worse {
					flag = "REGRESSION"
				}
				rows[i] = []string{v.Cell, v.Case, v.Baseline, v.Candidate, flag}
			}
			if err := table.Write(&b, table.Format(format), []string{"cell", "case", "baseline", "candidate", ""}, rows); err != nil {
				return err
			}
		}
		if len(c.Metrics) > 0 {
			if format == "markdown" {
				b.WriteString("\n### Metrics\n")
			}
			b.WriteString("\n")
			rows := make([][]string, len(c.Metrics))
			for i, m := range c.Metrics {
				unit := m.Unit
				if m.Direction != "" {
					unit += ", " + m.Direction + " is better"
				}
				rows[i] = []string{m.Cell, m.Case, m.Metric, num(m.BaselineMed), num(m.CandidateMed),
					fmt.Sprintf("%+.2f%%", m.DeltaPct), m.Significance, unit, metricFlag(m)}
			}
			if err := table.Write(&b, table.Format(format), []string{"cell", "case", "metric", "baseline", "candidate", "delta", "significance", "unit", ""}, rows); err != nil {
				return err
			}
		}
		return writeLimited(w, format, b.Bytes())
	}
	return fmt.Errorf("format %q is not available for a comparison (expected markdown, table, csv or json)", format)
}

func metricFlag(m MetricDelta) string {
	switch {
	case m.Regression:
		return fmt.Sprintf("REGRESSION (> %g%%)", m.Threshold*100)
	case m.Improvement:
		return "improvement"
	}
	return ""
}

// WriteHistory renders the test-plan history.
func WriteHistory(w io.Writer, format string, rows []HistoryRow, figures []string) error {
	switch format {
	case "json":
		return writeJSON(w, rows)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write(append([]string{"date", "sweep", "topologies", "engines", "image_digest", "revisions", "cases_passed", "cases_total", "cells_missing"}, figures...))
		for _, r := range rows {
			rec := []string{r.Date, r.Sweep, strings.Join(r.Topologies, " "), strings.Join(r.Engines, " "), r.Image, r.Revisions,
				strconv.Itoa(r.Passed), strconv.Itoa(r.Total), strconv.Itoa(r.Missing)}
			for _, f := range figures {
				v, ok := r.Figures[f]
				if ok {
					rec = append(rec, num(v))
				} else {
					rec = append(rec, "")
				}
			}
			_ = cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	case "markdown", "table":
		var b bytes.Buffer
		if format == "markdown" {
			b.WriteString("## Run history\n\n")
		}
		header := []string{"date", "sweep", "topology", "engine", "image", "revisions", "cases passed"}
		for _, f := range figures {
			header = append(header, f)
		}
		out := make([][]string, len(rows))
		for i, r := range rows {
			passed := fmt.Sprintf("%d/%d", r.Passed, r.Total)
			if r.Missing > 0 {
				passed += fmt.Sprintf(" (%d cells missing)", r.Missing)
			}
			out[i] = []string{r.Date, r.Sweep, strings.Join(r.Topologies, ", "), strings.Join(r.Engines, ", "), r.Image, r.Revisions, passed}
			for _, f := range figures {
				if v, ok := r.Figures[f]; ok {
					out[i] = append(out[i], num(v)+" "+r.Units[f])
				} else {
					out[i] = append(out[i], "–")
				}
			}
		}
		if err := table.Write(&b, table.Format(format), header, out); err != nil {
			return err
		}
		return writeLimited(w, format, b.Bytes())
	}
	return fmt.Errorf("format %q is not available for the history (expected markdown, table, csv, json or html)", format)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// budget keeps the rows of a markdown table that fit in limit bytes (by
// their cell widths), so a huge sweep is not laid out only to be cut; the
// second result is how many rows were left out. Other formats keep all.
func budget(format string, rows [][]string, limit int) ([][]string, int) {
	if format != "markdown" {
		return rows, 0
	}
	// tablewriter pads every row to the widest cell of each column.
	var widths []int
	for i, r := range rows {
		if len(widths) < len(r) {
			widths = append(widths, make([]int, len(r)-len(widths))...)
		}
		line := 2
		for j, c := range r {
			widths[j] = max(widths[j], len(c))
			line += widths[j] + 3
		}
		if (i+3)*line > limit {
			return rows[:i], len(rows) - i
		}
	}
	return rows, 0
}

// cutNote says what budget left out.
func cutNote(b *bytes.Buffer, cut int) {
	if cut > 0 {
		fmt.Fprintf(b, "\n> **Truncated:** %d more rows were cut to fit GitHub's 1 MiB step-summary limit. The CSV or JSON report (`--format csv|json`) has everything.\n", cut)
	}
}

// writeLimited writes markdown that fits a GitHub step summary: past the
// limit, whole lines are cut and a note says how many.
func writeLimited(w io.Writer, format string, b []byte) error {
	if format != "markdown" || len(b) <= StepSummaryLimit {
		_, err := w.Write(b)
		return err
	}
	const room = 512 // for the note
	cut := bytes.LastIndexByte(b[:StepSummaryLimit-room], '\n') + 1
	kept := bytes.Count(b[:cut], []byte("\n"))
	total := bytes.Count(b, []byte("\n"))
	if _, err := w.Write(b[:cut]); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n> **Truncated:** %d of %d lines were cut to fit GitHub's 1 MiB step-summary limit. The CSV or JSON report (`--format csv|json`) has everything.\n", total-kept, total)
	return err
}

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
func junitTime(r *Run) string {
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339} {
		if t, err := time.Parse(layout, r.Started); err == nil {
			return t.UTC().Format("2006-01-02T15:04:05")
		}
	}
	return r.CollectedAt.UTC().Format("2006-01-02T15:04:05")
}

// WriteJUnit renders runs as JUnit XML.
func WriteJUnit(w io.Writer, runs ...*Run) error {
	var root junitSuites
	for i, r := range runs {
		s := junitSuite{Name: r.ID, Package: "kvsweep." + r.Name, ID: i, Timestamp: junitTime(r), Hostname: "localhost"}
		total := 0.0
		cases := CaseIDs(r)
		for _, c := range r.Cells {
			byID := map[string]Case{}
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
				for _, name := range sortedKeys(cs.Metrics) {
					m := cs.Metrics[name]
					s.Properties = append(s.Properties, junitProperty{Name: c.Name + "/" + cases[i] + "/" + name, Value: strings.TrimSpace(num(m.Value) + " " + m.Unit)})
				}
				switch v {
				case Pass:
				case Fail:
					tc.Failure = &junitProblem{Message: cs.Message, Type: Fail, Text: cs.Message}
					s.Failures++
				case Skip:
					tc.Skipped = &junitProblem{Message: cs.Message}
					s.Skipped++
				default:
					msg := cs.Message
					if msg == "" {
						msg = outcomeText(c)
					}
					tc.Error = &junitProblem{Message: msg, Type: v, Text: msg}
					s.Errors++
				}
				s.Tests++
				s.Cases = append(s.Cases, tc)
			}
			if c.Outcome != OK {
				s.SystemErr += fmt.Sprintf("%s (%s): %s\n", c.Name, c.CellID, outcomeText(c))
			}
		}
		s.Time = strconv.FormatFloat(total, 'f', 3, 64)
		s.SystemOut = fmt.Sprintf("sweep %s: %d cells: %s\n", r.ID, len(r.Cells), r.CountsLine())
		root.Suites = append(root.Suites, s)
	}
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
