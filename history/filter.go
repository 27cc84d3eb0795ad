package history

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

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
func Match(c testrun.CellResult, fs []Filter) bool {
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
func Select(runs []*testrun.Run, fs []Filter) []*testrun.Run {
	if len(fs) == 0 {
		return runs
	}
	return KeepCells(runs, func(c testrun.CellResult) bool { return Match(c, fs) })
}

// KeepCells narrows runs to the cells keep accepts, with their notes,
// dropping runs left empty.
func KeepCells(runs []*testrun.Run, keep func(testrun.CellResult) bool) []*testrun.Run {
	var out []*testrun.Run
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
func notesFor(r *testrun.Run) []testrun.Note {
	var out []testrun.Note
	for _, n := range r.Notes {
		if n.Cell == "" || slices.ContainsFunc(r.Cells, func(c testrun.CellResult) bool { return c.Name == n.Cell }) {
			out = append(out, n)
		}
	}
	return out
}

// InWindow keeps the runs that started between from and to (zero: open).
func InWindow(runs []*testrun.Run, from, to time.Time) []*testrun.Run {
	var out []*testrun.Run
	for _, r := range runs {
		if d := r.Date(); (from.IsZero() || !d.Before(from)) && (to.IsZero() || !d.After(to)) {
			out = append(out, r)
		}
	}
	return out
}

// IsSelector reports whether SEL is a KEY=VALUE selector over stored runs
// (it may match several), rather than a sweep directory or id.
func IsSelector(sel string) bool {
	if fi, err := os.Stat(filepath.Join(sel, sweep.ManifestFile)); err == nil && !fi.IsDir() {
		return false
	}
	return strings.Contains(sel, "=")
}
