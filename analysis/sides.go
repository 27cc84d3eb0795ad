package analysis

import (
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/testrun"
)

// SideQuery names the two sides of a comparison: one selection split by
// filters (Selection set: its cells matching BaseFilter against the rest,
// or against those matching CandFilter), or a Baseline and a Candidate
// selection, each narrowed by its filter. A selection is what
// history.SelectRuns takes.
type SideQuery struct {
	Selection              string
	Baseline, Candidate    string
	BaseFilter, CandFilter []string // KEY=VALUE terms
}

// Sides are a comparison's runs and how a report names each side; Ignore
// lists the parameters that told the sides apart, left out when cells
// are matched.
type Sides struct {
	Base, Cand           []*testrun.Run
	BaseLabel, CandLabel string
	Ignore               []string
}

// SelectSides reads the runs of both sides from the store h (or the
// sweep directories the selections name).
func SelectSides(h history.History, q SideQuery) (*Sides, error) {
	if q.Selection == "" && (q.Baseline == "" || q.Candidate == "") {
		return nil, fail.Usagef("--baseline and --candidate go together")
	}
	bf, err := history.ParseFilters(q.BaseFilter)
	if err != nil {
		return nil, fail.Usagef("--baseline-filter: %v", err)
	}
	cf, err := history.ParseFilters(q.CandFilter)
	if err != nil {
		return nil, fail.Usagef("--candidate-filter: %v", err)
	}
	bfs, cfs := strings.Join(q.BaseFilter, ","), strings.Join(q.CandFilter, ",")
	s := &Sides{BaseLabel: strings.TrimSpace(q.Baseline + " " + bfs), CandLabel: strings.TrimSpace(q.Candidate + " " + cfs)}
	if sel := q.Selection; sel != "" {
		runs, err := history.SelectRuns(h, sel)
		if err != nil {
			return nil, err
		}
		if s.Base, s.Cand, s.Ignore = Split(runs, bf, cf); len(s.Base) == 0 {
			return nil, fmt.Errorf("no cell of %s matches --baseline-filter %s", sel, bfs)
		}
		s.BaseLabel, s.CandLabel = sel+" "+bfs, sel+" without "+bfs
		if len(cf) > 0 {
			s.CandLabel = sel + " " + cfs
		}
		return s, nil
	}
	if s.Base, err = history.SelectRuns(h, q.Baseline); err != nil {
		return nil, err
	}
	if s.Cand, err = history.SelectRuns(h, q.Candidate); err != nil {
		return nil, err
	}
	if len(bf) > 0 {
		s.Base, _, s.Ignore = Split(s.Base, bf, nil)
	}
	if len(cf) > 0 {
		var more []string
		_, s.Cand, more = Split(s.Cand, nil, cf)
		s.Ignore = append(s.Ignore, more...)
	}
	return s, nil
}
