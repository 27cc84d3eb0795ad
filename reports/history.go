package reports

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// DefaultFigures are the metrics the test-plan history shows per run.
var DefaultFigures = []string{"guard_promoted_s", "first_correct_response_s", "replacement_serving_s", "ttft_ms"}

// Filter selects cells: KEY=VALUE on a cell parameter (engine=vllm), on
// image.digest, or on image.source_revisions.COMPONENT (a commit prefix).
type Filter struct{ Key, Value string }

// ParseFilters reads "k=v" terms.
func ParseFilters(terms []string) ([]Filter, error) {
	var out []Filter
	for _, t := range terms {
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("filter %q: expected KEY=VALUE", t)
		}
		out = append(out, Filter{k, v})
	}
	return out, nil
}

// Match reports whether a cell matches every filter.
func Match(c CellResult, fs []Filter) bool {
	for _, f := range fs {
		switch {
		case f.Key == "image.digest":
			if !strings.HasPrefix(strings.TrimPrefix(c.Image.Digest, "sha256:"), strings.TrimPrefix(f.Value, "sha256:")) {
				return false
			}
		case f.Key == "image.ref":
			if c.Image.Ref != f.Value {
				return false
			}
		case strings.HasPrefix(f.Key, "image.source_revisions."):
			commit := c.Image.SourceRevisions.Commit(strings.TrimPrefix(f.Key, "image.source_revisions."))
			if commit == "" || !strings.HasPrefix(commit, f.Value) {
				return false
			}
		default:
			if c.Params[f.Key] != f.Value {
				return false
			}
		}
	}
	return true
}

// Select keeps the cells of runs that match the filters, dropping runs
// left empty.
func Select(runs []*Run, fs []Filter) []*Run {
	if len(fs) == 0 {
		return runs
	}
	return keepCells(runs, func(c CellResult) bool { return Match(c, fs) })
}

// keepCells narrows runs to the cells keep accepts, with their notes,
// dropping runs left empty.
func keepCells(runs []*Run, keep func(CellResult) bool) []*Run {
	var out []*Run
	for _, r := range runs {
		cp := *r
		cp.Cells = nil
		for _, c := range r.Cells {
			if keep(c) {
				cp.Cells = append(cp.Cells, c)
			}
		}
		if len(cp.Cells) > 0 {
			cp.Notes = notesFor(&cp)
			out = append(out, &cp)
		}
	}
	return out
}

// notesFor keeps the notes of r on the whole run and on its cells: a run
// narrowed by a filter shows only the notes of the cells it kept.
func notesFor(r *Run) []Note {
	var out []Note
	for _, n := range r.Notes {
		if n.Cell == "" || slices.ContainsFunc(r.Cells, func(c CellResult) bool { return c.Name == n.Cell }) {
			out = append(out, n)
		}
	}
	return out
}

// Split divides the cells of runs into the two sides of a comparison
// within one selection: the baseline is the cells that match base (the
// probes: engine=vllm-bare), the candidate those that match cand, or, with
// no cand, every cell that does not match base. ignore lists the cell
// parameters the filters name: the sides differ in them by construction,
// so cells are matched across the sides on the others.
func Split(runs []*Run, base, cand []Filter) (baseline, candidate []*Run, ignore []string) {
	baseline = Select(runs, base)
	if len(cand) > 0 {
		candidate = Select(runs, cand)
	} else {
		candidate = keepCells(runs, func(c CellResult) bool { return !Match(c, base) })
	}
	for _, f := range append(slices.Clone(base), cand...) {
		if !strings.HasPrefix(f.Key, "image.") && !slices.Contains(ignore, f.Key) {
			ignore = append(ignore, f.Key)
		}
	}
	return baseline, candidate, ignore
}

// InWindow keeps the runs that started between from and to (zero: open).
func InWindow(runs []*Run, from, to time.Time) []*Run {
	var out []*Run
	for _, r := range runs {
		if d := runDate(r); (from.IsZero() || !d.Before(from)) && (to.IsZero() || !d.After(to)) {
			out = append(out, r)
		}
	}
	return out
}

// ShortDigest is the first 12 hex digits of a digest.
func ShortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// HistoryRow is one run of the test-plan history.
type HistoryRow struct {
	Date       string             `json:"date"`
	Sweep      string             `json:"sweep"`
	Topologies []string           `json:"topologies"`
	Engines    []string           `json:"engines"`
	Image      string             `json:"image_digest"`
	Revisions  string             `json:"revisions"`
	Passed     int                `json:"cases_passed"`
	Total      int                `json:"cases_total"`
	Missing    int                `json:"cells_missing"`
	Figures    map[string]float64 `json:"figures"` // median over the run's cells and cases
	Units      map[string]string  `json:"units"`
	Notes      []Note             `json:"notes"` // the test plan's findings on the run (kvsweep note)
}

// History makes one row per run.
func History(runs []*Run, figures []string) []HistoryRow {
	rows := []HistoryRow{}
	for _, r := range runs {
		row := HistoryRow{Date: runDate(r).Format("2006-01-02 15:04"), Sweep: r.ID, Figures: map[string]float64{}, Units: map[string]string{},
			Notes: append([]Note{}, r.Notes...)}
		tops, engs, digests, revs := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
		samples := map[string][]float64{}
		for _, c := range r.Cells {
			tops[c.Params["topology"]] = true
			engs[c.Params["engine"]] = true
			if c.Image.Digest != "" {
				digests[ShortDigest(c.Image.Digest)] = true
			}
			if s := c.Image.SourceRevisions.Short(); s != "" {
				revs[s] = true
			}
			if c.Outcome != OK && c.Outcome != HarnessFailed {
				row.Missing++
				row.Total += len(c.Planned)
				continue
			}
			got := map[string]bool{}
			for _, cs := range c.Cases {
				got[cs.ID] = true
				row.Total++
				if cs.Verdict == Pass {
					row.Passed++
				}
				for _, f := range figures {
					if m, ok := cs.Metrics.Get(f); ok {
						samples[f] = append(samples[f], m.Value)
						row.Units[f] = m.Unit
					}
				}
			}
			for _, id := range c.Planned {
				if !got[id] {
					row.Total++
				}
			}
		}
		for f, xs := range samples {
			row.Figures[f] = median(xs)
		}
		row.Topologies, row.Engines = slices.Sorted(maps.Keys(tops)), slices.Sorted(maps.Keys(engs))
		row.Image = strings.Join(slices.Sorted(maps.Keys(digests)), " ")
		row.Revisions = strings.Join(slices.Sorted(maps.Keys(revs)), "; ")
		rows = append(rows, row)
	}
	return rows
}
