package history

import (
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/testrun"
)

// Query is what callers select stored runs by: the spec's name and ref, a
// window of run dates, a collection time, cell filters, the cells of the
// bad-node ledger, the newest run. Every field left zero selects all. A
// store answers it (History.Query) with the runs Apply would keep of all
// its runs, oldest first, each narrowed to the cells the query keeps.
type Query struct {
	// Named keeps the runs of the spec Name that tested Ref, both compared
	// exactly (either may be empty).
	Named     bool
	Name, Ref string
	// Spec keeps the runs of the spec of this name, whatever ref they
	// tested ("": any spec).
	Spec     string
	From, To time.Time // the run's date (Run.Date) within, both included; zero: open
	// CollectedSince keeps the runs collected at or after it; zero: any.
	CollectedSince time.Time
	Except         string   // a sweep id left out
	Filters        []Filter // cells matching every filter; a run left with none is dropped
	// InfraFailures keeps only the cells with a failure outside the test,
	// now or in an earlier attempt (the bad-node ledger's cells).
	InfraFailures bool
	// Newest keeps only the newest run (by collection time) of those
	// selected: the first of them, in the stores' order, if several were
	// collected at the same time.
	Newest bool
}

// Apply is the query over runs as a store lists them (oldest first): the
// meaning of every store's Query, and the path a store without an index
// of its own takes.
func Apply(runs []*testrun.Run, q Query) []*testrun.Run {
	var keep []*testrun.Run
	for _, r := range runs {
		if q.matchesRun(r) {
			keep = append(keep, r)
		}
	}
	keep = Select(keep, q.Filters)
	if q.InfraFailures {
		keep = KeepCells(keep, InfraFailure)
	}
	if q.Newest {
		var best *testrun.Run
		for _, r := range keep {
			if best == nil || r.CollectedAt.After(best.CollectedAt) {
				best = r
			}
		}
		if best == nil {
			return nil
		}
		return []*testrun.Run{best}
	}
	return keep
}

// matchesRun reports whether the run's own fields (not its cells) are
// what q selects.
func (q Query) matchesRun(r *testrun.Run) bool {
	d := r.Date()
	return (!q.Named || r.Name == q.Name && r.Ref == q.Ref) && (q.Spec == "" || r.Name == q.Spec) &&
		(q.Except == "" || r.ID != q.Except) &&
		(q.From.IsZero() || !d.Before(q.From)) && (q.To.IsZero() || !d.After(q.To)) &&
		(q.CollectedSince.IsZero() || !r.CollectedAt.Before(q.CollectedSince))
}

// InfraFailure reports whether a cell failed outside the test, now or in
// an earlier attempt: a cell the bad-node ledger counts. A cell whose job
// had not ended when it was collected (testrun.Unfinished: a run stored
// before collect refused such runs classed it infra) did not fail.
func InfraFailure(c testrun.CellResult) bool {
	if c.Class == testrun.ClassInfra && c.Outcome != testrun.OK && !testrun.Unfinished(c.State) {
		return true
	}
	for _, a := range c.Earlier {
		if a.Class == testrun.ClassInfra {
			return true
		}
	}
	return false
}

// Scan answers q by reading every run of h and applying it: the old path,
// and what the stores' own answers are held to.
func Scan(h History, q Query) ([]*testrun.Run, error) {
	all, err := h.Runs()
	if err != nil {
		return nil, err
	}
	return Apply(all, q), nil
}

// HistoryQuery is the query of report --history's flags: --filter terms,
// and --since and --until dates (2006-01-02, both included; empty for no
// bound).
func HistoryQuery(filters []string, since, until string) (Query, error) {
	var q Query
	fs, err := ParseFilters(filters)
	if err != nil {
		return q, fail.Usagef("--filter: %v", err)
	}
	q.Filters = fs
	if since != "" {
		if q.From, err = time.Parse("2006-01-02", since); err != nil {
			return q, fail.Usagef("--since %q: expected a date like 2026-11-01", since)
		}
	}
	if until != "" {
		if q.To, err = time.Parse("2006-01-02", until); err != nil {
			return q, fail.Usagef("--until %q: expected a date like 2026-11-30", until)
		}
		q.To = q.To.Add(24*time.Hour - time.Nanosecond)
	}
	return q, nil
}
