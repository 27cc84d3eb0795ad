package analysis

import (
	"maps"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// DefaultFigures are the metrics the test-plan history shows per run.
var DefaultFigures = []string{"guard_promoted_s", "first_correct_response_s", "replacement_serving_s", "ttft_ms"}

// Split divides the cells of runs into the two sides of a comparison
// within one selection: the baseline is the cells that match base (the
// probes: engine=vllm-bare), the candidate those that match cand, or, with
// no cand, every cell that does not match base. ignore lists the cell
// parameters the filters name: the sides differ in them by construction,
// so cells are matched across the sides on the others.
func Split(runs []*testrun.Run, base, cand []history.Filter) (baseline, candidate []*testrun.Run, ignore []string) {
	baseline = history.Select(runs, base)
	if len(cand) > 0 {
		candidate = history.Select(runs, cand)
	} else {
		candidate = history.KeepCells(runs, func(c testrun.CellResult) bool { return !history.Match(c, base) })
	}
	for _, f := range append(slices.Clone(base), cand...) {
		if !strings.HasPrefix(f.Key, "image.") && !slices.Contains(ignore, f.Key) {
			ignore = append(ignore, f.Key)
		}
	}
	return baseline, candidate, ignore
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
	Notes      []testrun.Note     `json:"notes"` // the test plan's findings on the run (kvsweep note)
}

// History makes one row per run.
func History(runs []*testrun.Run, figures []string) []HistoryRow {
	rows := []HistoryRow{}
	for _, r := range runs {
		row := HistoryRow{Date: r.Date().Format("2006-01-02 15:04"), Sweep: r.ID, Figures: map[string]float64{}, Units: map[string]string{},
			Notes: append([]testrun.Note{}, r.Notes...)}
		tops, engs, digests, revs := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
		samples := map[string][]float64{}
		for _, c := range r.Cells {
			tops[c.Params["topology"]] = true
			engs[c.Params["engine"]] = true
			if c.Image.Digest != "" {
				digests[testrun.ShortDigest(c.Image.Digest)] = true
			}
			if s := c.Image.SourceRevisions.Short(); s != "" {
				revs[s] = true
			}
			if c.Outcome != testrun.OK && c.Outcome != testrun.HarnessFailed {
				row.Missing++
				row.Total += len(c.Planned)
				continue
			}
			got := map[string]bool{}
			for _, cs := range c.Cases {
				got[cs.ID] = true
				row.Total++
				if cs.Verdict == result.Pass {
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
			row.Figures[f] = Median(xs)
		}
		row.Topologies, row.Engines = slices.Sorted(maps.Keys(tops)), slices.Sorted(maps.Keys(engs))
		row.Image = strings.Join(slices.Sorted(maps.Keys(digests)), " ")
		row.Revisions = strings.Join(slices.Sorted(maps.Keys(revs)), "; ")
		rows = append(rows, row)
	}
	return rows
}
