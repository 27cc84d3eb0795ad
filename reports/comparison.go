package reports

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/internal/table"
)

// WriteComparison renders a baseline/candidate comparison.
func WriteComparison(w io.Writer, format Format, c *analysis.Comparison) error {
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

// writeComparisonText writes the comparison as markdown or a plain table:
// what changed, the summary, the cells and cases one side lacks, the
// verdict changes and the metrics.
func writeComparisonText(w io.Writer, format Format, c *analysis.Comparison) error {
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
	if err := writeOneSided(&b, format, c.OneSided); err != nil {
		return err
	}
	return writeLimited(w, format, b.Bytes())
}

// writeVerdictChanges writes the verdict changes' table, if any.
func writeVerdictChanges(b *bytes.Buffer, format Format, vs []analysis.VerdictChange) error {
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
func writeMetricDeltas(b *bytes.Buffer, format Format, shown []analysis.MetricDelta) error {
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

// writeChanges opens a comparison with what differs between its sides.
func writeChanges(b *bytes.Buffer, format Format, cs []analysis.Change) error {
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

// writeOneSided writes the metrics only one side measured, if any: each
// beside an empty column for the side that did not.
func writeOneSided(b *bytes.Buffer, format Format, ms []analysis.OneSidedMetric) error {
	if len(ms) == 0 {
		return nil
	}
	if format == "markdown" {
		b.WriteString("\n### Measured on one side only\n")
	}
	b.WriteString("\n")
	rows := make([][]string, len(ms))
	for i, m := range ms {
		base, cand := "—", "—"
		if m.Side == "baseline" {
			base = num(m.Median)
		} else {
			cand = num(m.Median)
		}
		rows[i] = []string{m.Cell, m.Case, m.Metric, base, cand, m.Unit}
	}
	return table.Write(b, table.Format(format), []string{"cell", "case", "metric", "baseline", "candidate", "unit"}, rows)
}
