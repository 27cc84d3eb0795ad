package reports

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/testrun"
)

// WriteStepSummary writes the parts (markdown) as one GitHub step summary,
// cut at a line with a note where it would pass the 1 MiB limit.
func WriteStepSummary(w io.Writer, parts ...[]byte) error {
	return writeLimited(w, "markdown", bytes.Join(parts, []byte("\n")))
}

// WriteRuns writes the runs a selection named as one document: a summary
// per run (markdown, table), one CSV under one header, one JUnit document,
// one HTML page, or JSON: the run itself for a sweep directory or id, an
// array of runs for a selector (IsSelector), however many it matched.
func WriteRuns(w io.Writer, format Format, runs []*testrun.Run, selector bool, label string) error {
	switch format {
	case "junit":
		return WriteJUnit(w, runs...)
	case "html":
		return WriteHTML(w, runs, "kvsweep: "+label)
	case "csv":
		return writeSummaryCSV(w, runs)
	case "json":
		if selector || len(runs) != 1 {
			return writeJSON(w, append([]*testrun.Run{}, runs...))
		}
		return writeJSON(w, runs[0])
	}
	for i, r := range runs {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := WriteSummary(w, format, r); err != nil {
			return err
		}
	}
	return nil
}

// HistoryQuery is what a history report says of its selection: the
// terms of report --history's flags, the metrics shown per run, and the
// store the runs came from with how many it holds (for a report of none).
type HistoryQuery struct {
	Spec         string   // the spec's name; empty for every spec
	Filters      []string // KEY=VALUE terms
	Since, Until string   // dates, 2006-01-02; empty for no bound
	Figures      []string // metrics shown per run (default DefaultFigures)
	Store        string   // the store, as messages name it
	Stored       int      // the runs it holds
}

// WriteHistoryReport writes the history of runs, those of a store that q
// selected: a table of runs (markdown, table, csv, json), JUnit, or the
// HTML page. It reads nothing but runs: the caller queried the store.
func WriteHistoryReport(w io.Writer, format Format, runs []*testrun.Run, q HistoryQuery) error {
	switch format {
	case "junit":
		return WriteJUnit(w, runs...)
	case "html":
		title := "kvsweep history"
		if what := q.terms(); len(what) > 0 {
			title += ": " + strings.Join(what, ", ")
		}
		return WriteHTML(w, runs, title)
	}
	figures := q.Figures
	if len(figures) == 0 {
		figures = analysis.DefaultFigures
	}
	if len(runs) == 0 && (format == "markdown" || format == "table") {
		what := append([]string{fmt.Sprintf("%d stored run(s)", q.Stored)}, q.terms()...)
		_, err := fmt.Fprintf(w, "No run to show in %s (%s).\n", q.Store, strings.Join(what, ", "))
		return err
	}
	return WriteHistory(w, format, analysis.History(runs, figures), figures)
}

// terms says what the query selects, as its flags: "--filter engine=vllm",
// "--since 2026-11-01".
func (q HistoryQuery) terms() []string {
	var out []string
	if q.Spec != "" {
		out = append(out, "--spec "+q.Spec)
	}
	for _, f := range q.Filters {
		out = append(out, "--filter "+f)
	}
	if q.Since != "" {
		out = append(out, "--since "+q.Since)
	}
	if q.Until != "" {
		out = append(out, "--until "+q.Until)
	}
	return out
}
