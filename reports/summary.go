package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/internal/table"
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
			out[i] = testrun.NotReported // a result read by an earlier kvsweep
		}
	}
	return out
}

// WriteSummary renders one run: the cells x cases verdict grid, then the
// metrics, in markdown, table, CSV or JSON.
func WriteSummary(w io.Writer, format Format, r *testrun.Run) error {
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
		if err := writeCacheStates(&b, format, r); err != nil {
			return err
		}
		if err := writeProfiles(&b, format, r); err != nil {
			return err
		}
		if err := writeGPU(&b, format, r); err != nil {
			return err
		}
		if err := writeHealth(&b, format, r); err != nil {
			return err
		}
		if err := writeMetrics(&b, format, r); err != nil {
			return err
		}
		if err := writeWorkers(&b, format, r); err != nil {
			return err
		}
		writeNotes(&b, format, []analysis.HistoryRow{{Sweep: r.ID, Date: "", Notes: r.Notes}})
		return writeLimited(w, format, b.Bytes())
	}
	return fmt.Errorf("format %q is not available for a summary (expected markdown, table, csv, json, junit or html)", format)
}

// writeMetrics writes a summary's metrics table (markdown, table), as
// many rows as fit the step summary.
func writeMetrics(b *bytes.Buffer, format Format, r *testrun.Run) error {
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
