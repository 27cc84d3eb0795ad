package reports

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// CollectDir collects the sweep in dir (see Collect), writes its
// results.json and, unless storePath is empty, stores the run in the
// history store there (collecting again replaces it). alongside, unless
// nil, is given the collected run while those are written (a report
// made from it, kept until CollectDir has returned without an error); it
// must not change the run. CollectDir returns when both are done.
func CollectDir(dir string, opts CollectOptions, storePath string, alongside func(*Run)) (*Run, error) {
	run, err := Collect(dir, opts)
	if err != nil {
		return nil, err
	}
	if alongside != nil {
		var wg sync.WaitGroup
		wg.Go(func() { alongside(run) })
		defer wg.Wait()
	}
	if storePath == "" {
		return run, WriteRun(dir, run)
	}
	// results.json and the store hold the same bytes (a collected run has
	// no notes): encoded once.
	var b bytes.Buffer
	if err := encodeRun(&b, run); err != nil {
		return nil, err
	}
	if err := sweep.WriteFileAtomic(filepath.Join(dir, sweep.ResultsFile), b.Bytes(), 0o644); err != nil {
		return nil, err
	}
	st, err := OpenStore(storePath, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return run, st.put(run.ID, bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// SelectRuns resolves a selection SEL: a sweep directory (its
// results.json), a sweep id in the history store at storePath, or a
// KEY=VALUE[,KEY=VALUE] selector over the stored runs.
func SelectRuns(storePath, sel string) ([]*Run, error) {
	if fi, err := os.Stat(filepath.Join(sel, sweep.ManifestFile)); err == nil && !fi.IsDir() {
		r, err := ReadRun(sel)
		if err != nil {
			return nil, err
		}
		return []*Run{r}, nil
	}
	st, err := OpenStore(storePath, true)
	if err != nil {
		return nil, fmt.Errorf("%q is not a sweep directory, and %w", sel, err)
	}
	defer st.Close()
	if strings.Contains(sel, "=") {
		fs, err := ParseFilters(strings.Split(sel, ","))
		if err != nil {
			return nil, fail.Usagef("%v", err)
		}
		all, err := st.Runs()
		if err != nil {
			return nil, err
		}
		if runs := Select(all, fs); len(runs) > 0 {
			return runs, nil
		}
		return nil, fail.Usagef("no stored run has cells matching %s", sel)
	}
	r, err := st.Get(sel)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fail.Usagef("%q is neither a sweep directory nor a run in %s (kvsweep report --history lists them)", sel, storePath)
	}
	return []*Run{r}, nil
}

// Latest returns the newest run in the store at storePath with that name
// and ref, other than the run except; nil when there is none (no store
// yet is none).
func Latest(storePath, name, ref, except string) (*Run, error) {
	all, err := storedRuns(storePath, true)
	if err != nil {
		return nil, err
	}
	var best *Run
	for _, r := range all {
		if r.Name == name && r.Ref == ref && r.ID != except && (best == nil || r.CollectedAt.After(best.CollectedAt)) {
			best = r
		}
	}
	return best, nil
}

// WriteStepSummary writes the parts (markdown) as one GitHub step summary,
// cut at a line with a note where it would pass the 1 MiB limit.
func WriteStepSummary(w io.Writer, parts ...[]byte) error {
	return writeLimited(w, "markdown", bytes.Join(parts, []byte("\n")))
}

// Gates are what report --check requires beyond its defaults.
type Gates struct {
	// RequireProvenance fails a cell that ran without the image's
	// source-revisions.json.
	RequireProvenance bool
}

// Check is report --check and kvsweep ci's verdict: a *fail.CheckError
// that says every reason when a case failed or is INVALID, a cell has no
// valid result, there are regressions, or, with a comparison (cmp may be
// nil), it matched no cell or the candidate lacks a cell or case of the
// baseline; nil otherwise. Nothing to check is a failure too.
func Check(runs []*Run, comparison *Comparison, g Gates) error {
	var why []string
	reason := func(n int, format string, examples []string) {
		if n == 0 {
			return
		}
		msg := fmt.Sprintf(format, n)
		if len(examples) > 0 {
			if len(examples) > 3 {
				examples = append(examples[:3], "...")
			}
			msg += " (" + strings.Join(examples, "; ") + ")"
		}
		why = append(why, msg)
	}
	cells := 0
	var failed, invalid, infra, broken, unproven []string
	for _, r := range runs {
		for _, c := range r.Cells {
			cells++
			switch {
			case c.Outcome != OK && c.Class == ClassInfra:
				infra = append(infra, c.Name+": "+outcomeText(c))
			case c.Outcome != OK:
				broken = append(broken, c.Name+": "+outcomeText(c))
			}
			for _, cs := range c.Cases {
				switch cs.Verdict {
				case Fail, Error:
					failed = append(failed, c.Name+" "+cs.ID)
				case Invalid:
					invalid = append(invalid, c.Name+" "+cs.ID+": "+cs.Message)
				}
			}
			if g.RequireProvenance && c.Image.SourceRevisions == nil {
				unproven = append(unproven, c.Name+": "+cmp.Or(c.NoProvenance, "no source-revisions.json"))
			}
		}
	}
	if cells == 0 {
		why = append(why, "no cell to check")
	}
	reason(len(failed), "%d failed case(s)", failed)
	reason(len(invalid), "%d INVALID case(s)", invalid)
	reason(len(broken), "%d cell(s) without a valid result (test)", broken)
	reason(len(infra), "%d cell(s) without a result for a reason outside the test (infra)", infra)
	reason(len(unproven), "%d cell(s) ran without provenance (--require-provenance)", unproven)
	if comparison != nil {
		reason(comparison.Regressions(), "%d regression(s)", nil)
		if comparison.Matched == 0 {
			why = append(why, fmt.Sprintf("the comparison matched no cell: baseline %s and candidate %s share no cell", comparison.Baseline, comparison.Candidate))
		}
		reason(len(comparison.OnlyInBaseline), "%d baseline cell(s) missing from the candidate", comparison.OnlyInBaseline)
		reason(len(comparison.MissingCases), "%d baseline case(s) missing from the candidate", comparison.MissingCases)
	}
	if len(why) == 0 {
		return nil
	}
	return &fail.CheckError{Msg: "check failed: " + strings.Join(why, "; ")}
}

// WriteRuns writes the runs a selection named as one document: a summary
// per run (markdown, table), one CSV under one header, one JUnit document,
// one HTML page, or JSON: the run itself for a sweep directory or id, an
// array of runs for a selector (IsSelector), however many it matched.
func WriteRuns(w io.Writer, format string, runs []*Run, selector bool, label string) error {
	switch format {
	case "junit":
		return WriteJUnit(w, runs...)
	case "html":
		return WriteHTML(w, runs, "kvsweep: "+label)
	case "csv":
		return writeSummaryCSV(w, runs)
	case "json":
		if selector || len(runs) != 1 {
			return writeJSON(w, append([]*Run{}, runs...))
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

// IsSelector reports whether SEL is a KEY=VALUE selector over stored runs
// (it may match several), rather than a sweep directory or id.
func IsSelector(sel string) bool {
	if fi, err := os.Stat(filepath.Join(sel, sweep.ManifestFile)); err == nil && !fi.IsDir() {
		return false
	}
	return strings.Contains(sel, "=")
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
func WriteHistoryReport(w io.Writer, storePath, format string, q HistoryQuery) ([]*Run, error) {
	fs, err := ParseFilters(q.Filters)
	if err != nil {
		return nil, fail.Usagef("--filter: %v", err)
	}
	from, to, err := window(q.Since, q.Until)
	if err != nil {
		return nil, err
	}
	all, err := storedRuns(storePath, false)
	if err != nil {
		return nil, err
	}
	runs := InWindow(Select(all, fs), from, to)
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
		figures = DefaultFigures
	}
	if len(runs) == 0 && (format == "markdown" || format == "table") {
		what := append([]string{fmt.Sprintf("%d stored run(s)", len(all))}, q.terms()...)
		_, err := fmt.Fprintf(w, "No run to show in %s (%s).\n", storePath, strings.Join(what, ", "))
		return nil, err
	}
	return runs, WriteHistory(w, format, History(runs, figures), figures)
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

// ParseThresholds makes CompareOptions from --threshold ("5%" or 0.05)
// and --metric-threshold terms (NAME=PCT).
func ParseThresholds(threshold string, perMetric []string) (CompareOptions, error) {
	opts := CompareOptions{PerMetric: map[string]float64{}}
	var err error
	if opts.Threshold, err = parsePct(threshold); err != nil {
		return opts, fail.Usagef("--threshold: %v", err)
	}
	for _, mt := range perMetric {
		name, pct, ok := strings.Cut(mt, "=")
		v, err := parsePct(pct)
		if !ok || err != nil {
			return opts, fail.Usagef("--metric-threshold %q: expected NAME=PCT, like ttft_ms=10%%", mt)
		}
		opts.PerMetric[name] = v
	}
	return opts, nil
}

// parsePct reads "5%" or "0.05" as 0.05.
func parsePct(s string) (float64, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		return v / 100, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && v > 1 {
		return 0, fmt.Errorf("%q: write a percentage as %s%%", s, s)
	}
	return v, err
}

// storedRuns reads every run of the store at path, which is opened
// read-only; with missingOK a store that does not exist yet has none.
func storedRuns(path string, missingOK bool) ([]*Run, error) {
	if _, err := os.Stat(path); missingOK && errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	st, err := OpenStore(path, true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Runs()
}
