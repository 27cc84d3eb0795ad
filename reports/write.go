package reports

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/fail"
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
func WriteRuns(w io.Writer, format string, runs []*testrun.Run, selector bool, label string) error {
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

// HistoryQuery selects the runs of a history report.
type HistoryQuery struct {
	Filters      []string // KEY=VALUE terms
	Since, Until string   // dates, 2006-01-02; empty for no bound
	Figures      []string // metrics shown per run (default DefaultFigures)
}

// WriteHistoryReport writes the history of the runs in the store at
// storePath that match q: a table of runs (markdown, table, csv, json),
// JUnit, or the HTML page. It returns the runs it reported.
func WriteHistoryReport(w io.Writer, storePath, format string, q HistoryQuery) ([]*testrun.Run, error) {
	fs, err := history.ParseFilters(q.Filters)
	if err != nil {
		return nil, fail.Usagef("--filter: %v", err)
	}
	from, to, err := window(q.Since, q.Until)
	if err != nil {
		return nil, err
	}
	all, err := history.StoredRuns(storePath, false)
	if err != nil {
		return nil, err
	}
	runs := history.InWindow(history.Select(all, fs), from, to)
	switch format {
	case "junit":
		return runs, WriteJUnit(w, runs...)
	case "html":
		title := "kvsweep history"
		if what := q.terms(); len(what) > 0 {
			title += ": " + strings.Join(what, ", ")
		}
		return runs, WriteHTML(w, runs, title)
	}
	figures := q.Figures
	if len(figures) == 0 {
		figures = analysis.DefaultFigures
	}
	if len(runs) == 0 && (format == "markdown" || format == "table") {
		what := append([]string{fmt.Sprintf("%d stored run(s)", len(all))}, q.terms()...)
		_, err := fmt.Fprintf(w, "No run to show in %s (%s).\n", history.Redact(storePath), strings.Join(what, ", "))
		return nil, err
	}
	return runs, WriteHistory(w, format, analysis.History(runs, figures), figures)
}

// terms says what the query selects, as its flags: "--filter engine=vllm",
// "--since 2026-11-01".
func (q HistoryQuery) terms() []string {
	var out []string
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

func window(since, until string) (from, to time.Time, err error) {
	if since != "" {
		if from, err = time.Parse("2006-01-02", since); err != nil {
			return from, to, fail.Usagef("--since %q: expected a date like 2026-11-01", since)
		}
	}
	if until != "" {
		if to, err = time.Parse("2006-01-02", until); err != nil {
			return from, to, fail.Usagef("--until %q: expected a date like 2026-11-30", until)
		}
		to = to.Add(24*time.Hour - time.Nanosecond)
	}
	return from, to, nil
}
