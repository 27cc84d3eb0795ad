package reports

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/testrun"
)

// WriteHistory renders the test-plan history.
func WriteHistory(w io.Writer, format Format, rows []analysis.HistoryRow, figures []string) error {
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
func writeNotes(b *bytes.Buffer, format Format, rows []analysis.HistoryRow) {
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
