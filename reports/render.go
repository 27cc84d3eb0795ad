package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

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
func cellVerdicts(c testrun.CellResult, cases []string) []string {
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
		case c.Outcome == testrun.Missing:
			out[i] = "MISSING"
		case c.Outcome != testrun.OK:
			out[i] = c.Outcome
		default:
			out[i] = "NOT_REPORTED"
		}
	}
	return out
}

// WriteSummary renders one run: the cells x cases verdict grid, then the
// metrics, in markdown, table, CSV or JSON.
func WriteSummary(w io.Writer, format string, r *testrun.Run) error {
	cases := testrun.CaseIDs(r)
	switch format {
	case "json":
		return writeJSON(w, r)
	case "csv":
		return writeSummaryCSV(w, []*testrun.Run{r})
	case "markdown", "table":
		var b bytes.Buffer
		if format == "markdown" {
			fmt.Fprintf(&b, "## Sweep %s\n\n", r.ID)
		} else {
			fmt.Fprintf(&b, "Sweep %s\n", r.ID)
		}
		fmt.Fprintf(&b, "%d cells: %s\n\n", len(r.Cells), r.CountsLine())
		if err := writeRevisionGrid(&b, format, r); err != nil {
			return err
		}
		header := append(append([]string{"cell", "outcome"}, cases...), "image", "revisions")
		hw := slices.ContainsFunc(r.Cells, func(c testrun.CellResult) bool { return c.Hardware != nil })
		if hw {
			header = append(header, "hardware")
		}
		// Only the rows that fit are made.
		grid := fitter{format: format, limit: StepSummaryLimit / 2}
		var rows [][]string
		for _, c := range r.Cells {
			row := append(append([]string{c.Name, testrun.OutcomeText(c)}, cellVerdicts(c, cases)...), testrun.ShortDigest(c.Image.Digest), c.Revisions())
			if hw {
				row = append(row, c.Hardware.Summary())
			}
			if !grid.fits(row) {
				break
			}
			rows = append(rows, row)
		}
		cut := len(r.Cells) - len(rows)
		if err := table.Write(&b, table.Format(format), header, rows); err != nil {
			return err
		}
		cutNote(&b, cut)
		if err := writeEvidence(&b, format, r); err != nil {
			return err
		}
		if err := writeMetrics(&b, format, r); err != nil {
			return err
		}
		writeNotes(&b, format, []analysis.HistoryRow{{Sweep: r.ID, Date: "", Notes: r.Notes}})
		return writeLimited(w, format, b.Bytes())
	}
	return fmt.Errorf("format %q is not available for a summary (expected markdown, table, csv, json, junit or html)", format)
}

// writeMetrics writes a summary's metrics table (markdown, table), as
// many rows as fit the step summary.
func writeMetrics(b *bytes.Buffer, format string, r *testrun.Run) error {
	total := 0
	for _, c := range r.Cells {
		for _, cs := range c.Cases {
			total += len(cs.Metrics)
		}
	}
	if total > 0 {
		if format == "markdown" {
			b.WriteString("\n### Metrics\n")
		}
		b.WriteString("\n")
		// Only the rows that fit are made: a large sweep has 100,000s.
		fit := fitter{format: format, limit: StepSummaryLimit - b.Len() - 4096}
		var mrows [][]string
	rows:
		for _, c := range r.Cells {
			for _, cs := range c.Cases {
				for _, m := range cs.Metrics {
					row := []string{c.Name, cs.ID, m.Name, num(m.Value), m.Unit, better(m.Direction)}
					if !fit.fits(row) {
						break rows
					}
					mrows = append(mrows, row)
				}
			}
		}
		cut := total - len(mrows)
		if err := table.Write(b, table.Format(format), []string{"cell", "case", "metric", "value", "unit", "better"}, mrows); err != nil {
			return err
		}
		cutNote(b, cut)
	}
	return nil
}

// writeSummaryCSV writes the long-format rows of runs under one header.
func writeSummaryCSV(w io.Writer, runs []*testrun.Run) error {
	cw := newCSV(w)
	_ = cw.Write([]string{"sweep_id", "cell_id", "cell", "outcome", "detail", "case", "verdict", "metric", "value", "unit", "direction", "image_digest", "revisions", "class", "attempts"})
	for _, r := range runs {
		cases := testrun.CaseIDs(r)
		for _, c := range r.Cells {
			base := []string{r.ID, c.CellID, c.Name, c.Outcome, c.Detail}
			tail := []string{c.Image.Digest, c.Revisions(), c.Class, strconv.Itoa(c.Attempts)}
			verdicts := cellVerdicts(c, cases)
			byID := map[string]result.Case{}
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
				for _, m := range cs.Metrics {
					_ = cw.Write(append(append(append([]string{}, base...), id, verdicts[i], m.Name, num(m.Value), m.Unit, m.Direction), tail...))
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteComparison renders a baseline/candidate comparison.
func WriteComparison(w io.Writer, format string, c *analysis.Comparison) error {
	switch format {
	case "json":
		return writeJSON(w, c)
	case "html":
		return writeComparisonHTML(w, c)
	case "junit":
		return writeComparisonJUnit(w, c)
	case "csv":
		return writeComparisonCSV(w, c)
	case "markdown", "table":
		return writeComparisonText(w, format, c)
	}
	return fmt.Errorf("format %q is not available for a comparison (expected markdown, table, csv, json, junit or html)", format)
}

// writeComparisonCSV writes a row per verdict change and per metric shown.
func writeComparisonCSV(w io.Writer, c *analysis.Comparison) error {
	cw := newCSV(w)
	_ = cw.Write([]string{"kind", "cell", "case", "metric", "baseline", "candidate", "delta_pct", "significance", "unit", "direction", "flag"})
	for _, v := range c.Verdicts {
		flag := ""
		if v.Worse {
			flag = "REGRESSION"
		}
		_ = cw.Write([]string{"verdict", v.Cell, v.Case, "", v.Baseline, v.Candidate, "", "", "", "", flag})
	}
	shown, _ := c.Shown()
	for _, m := range shown {
		_ = cw.Write([]string{"metric", m.Cell, m.Case, m.Metric, num(m.BaselineMed), num(m.CandidateMed),
			strconv.FormatFloat(m.DeltaPct, 'f', 2, 64), m.Significance, m.Unit, m.Direction, metricFlag(m)})
	}
	cw.Flush()
	return cw.Error()
}

// writeComparisonText writes the comparison as markdown or a plain table:
// what changed, the summary, the cells and cases one side lacks, the
// verdict changes and the metrics.
func writeComparisonText(w io.Writer, format string, c *analysis.Comparison) error {
	var b bytes.Buffer
	if format == "markdown" {
		fmt.Fprintf(&b, "## %s vs %s\n\n", c.Candidate, c.Baseline)
	}
	if err := writeChanges(&b, format, c.Changes); err != nil {
		return err
	}
	shown, unchanged := c.Shown()
	fmt.Fprintf(&b, "%s\n", c.Summary())
	var notes []string
	for _, k := range c.OnlyInBaseline {
		notes = append(notes, "only in the baseline: "+k)
	}
	for _, k := range c.OnlyInCandidate {
		notes = append(notes, "only in the candidate: "+k)
	}
	for _, k := range c.MissingCases {
		notes = append(notes, "the candidate lacks a case of the baseline: "+k)
	}
	for _, k := range c.VerdictsOnly {
		notes = append(notes, "verdicts only, metrics not compared: "+k)
	}
	if len(notes) > 0 {
		for i := range notes {
			notes[i] = table.Visible(notes[i])
		}
		b.WriteString("\n- " + strings.Join(notes, "\n- ") + "\n")
	}
	if err := writeVerdictChanges(&b, format, c.Verdicts); err != nil {
		return err
	}
	if err := writeMetricDeltas(&b, format, shown); err != nil {
		return err
	}
	if unchanged > 0 {
		fmt.Fprintf(&b, "\n%d unchanged metric(s) not shown (--all shows them).\n", unchanged)
	}
	return writeLimited(w, format, b.Bytes())
}

// writeVerdictChanges writes the verdict changes' table, if any.
func writeVerdictChanges(b *bytes.Buffer, format string, vs []analysis.VerdictChange) error {
	if len(vs) == 0 {
		return nil
	}
	if format == "markdown" {
		b.WriteString("\n### Verdict changes\n")
	}
	b.WriteString("\n")
	rows := make([][]string, len(vs))
	for i, v := range vs {
		flag := ""
		if v.Worse {
			flag = "REGRESSION"
		}
		rows[i] = []string{v.Cell, v.Case, v.Baseline, v.Candidate, flag}
	}
	return table.Write(b, table.Format(format), []string{"cell", "case", "baseline", "candidate", "flag"}, rows)
}

// writeMetricDeltas writes the table of the metrics shown, if any.
func writeMetricDeltas(b *bytes.Buffer, format string, shown []analysis.MetricDelta) error {
	if len(shown) == 0 {
		return nil
	}
	if format == "markdown" {
		b.WriteString("\n### Metrics\n")
	}
	b.WriteString("\n")
	rows := make([][]string, len(shown))
	for i, m := range shown {
		unit := m.Unit
		if m.Direction != "" {
			unit += ", " + m.Direction + " is better"
		}
		rows[i] = []string{m.Cell, m.Case, m.Metric, num(m.BaselineMed), num(m.CandidateMed),
			fmt.Sprintf("%+.2f%%", m.DeltaPct), m.Significance, unit, metricFlag(m)}
	}
	return table.Write(b, table.Format(format), []string{"cell", "case", "metric", "baseline", "candidate", "delta", "significance", "unit", "flag"}, rows)
}

// csvWriter writes CSV records whose text cells cannot run as spreadsheet
// formulas: a cell that is not a number and starts with =, +, -, @, a tab
// or a carriage return is written with a leading apostrophe, which a
// spreadsheet shows as text (text from result.json is the code under
// test's). Numbers, negative ones too, are written as they are.
type csvWriter struct{ *csv.Writer }

func newCSV(w io.Writer) csvWriter { return csvWriter{csv.NewWriter(w)} }

func (c csvWriter) Write(rec []string) error {
	out := rec
	for i, f := range rec {
		if formulaLike(f) {
			if &out[0] == &rec[0] {
				out = append([]string(nil), rec...)
			}
			out[i] = "'" + f
		}
	}
	return c.Writer.Write(out)
}

func formulaLike(f string) bool {
	if f == "" || !strings.ContainsRune("=+-@\t\r", rune(f[0])) {
		return false
	}
	_, err := strconv.ParseFloat(f, 64)
	return err != nil
}

// writeChanges opens a comparison with what differs between its sides.
func writeChanges(b *bytes.Buffer, format string, cs []analysis.Change) error {
	if format == "markdown" {
		b.WriteString("### What changed\n\n")
	}
	if len(cs) == 0 {
		b.WriteString("Baseline and candidate ran the same image, commits, kvsweep, cluster, nodes and spec.\n\n")
		return nil
	}
	rows := make([][]string, len(cs))
	for i, c := range cs {
		rows[i] = []string{c.What, c.Baseline, c.Candidate}
	}
	if err := table.Write(b, table.Format(format), []string{"what", "baseline", "candidate"}, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

func metricFlag(m analysis.MetricDelta) string {
	switch {
	case m.Regression:
		return fmt.Sprintf("REGRESSION (> %g%%)", m.Threshold*100)
	case m.Improvement:
		return "improvement"
	}
	return ""
}

// WriteHistory renders the test-plan history.
func WriteHistory(w io.Writer, format string, rows []analysis.HistoryRow, figures []string) error {
	switch format {
	case "json":
		return writeJSON(w, rows)
	case "csv":
		cw := newCSV(w)
		_ = cw.Write(append([]string{"date", "sweep", "topologies", "engines", "image_digest", "revisions", "cases_passed", "cases_total", "cells_missing"}, append(slices.Clone(figures), "notes")...))
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
			_ = cw.Write(append(rec, noteLines(r.Notes, "\n")))
		}
		cw.Flush()
		return cw.Error()
	case "markdown", "table":
		var b bytes.Buffer
		if format == "markdown" {
			b.WriteString("## Run history\n\n")
		}
		header := append([]string{"date", "sweep", "topology", "engine", "image", "revisions", "cases passed"}, figures...)
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
		writeNotes(&b, format, rows)
		return writeLimited(w, format, b.Bytes())
	}
	return fmt.Errorf("format %q is not available for the history (expected markdown, table, csv, json or html)", format)
}

// noteLines joins notes, one per line (sep).
func noteLines(ns []testrun.Note, sep string) string {
	lines := make([]string, len(ns))
	for i, n := range ns {
		lines[i] = n.String()
	}
	return strings.Join(lines, sep)
}

// writeNotes lists the notes of the history's runs under the table, run by
// run in the table's order.
func writeNotes(b *bytes.Buffer, format string, rows []analysis.HistoryRow) {
	first := true
	for _, r := range rows {
		if len(r.Notes) == 0 {
			continue
		}
		if first {
			if format == "markdown" {
				b.WriteString("\n### Notes\n")
			} else {
				b.WriteString("\nNotes:\n")
			}
			first = false
		}
		fmt.Fprintf(b, "\n%s:\n", strings.TrimSpace(r.Date+" "+r.Sweep))
		for _, n := range r.Notes {
			fmt.Fprintf(b, "- %s\n", table.Visible(n.String()))
		}
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
