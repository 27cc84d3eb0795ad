package history

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/testrun"
)

// Removal records a run taken out of the store (kvsweep store forget):
// which run it was, who removed it, when and why. The store keeps it
// after the run is gone, so that the history says a run is missing on
// purpose rather than losing it without a trace.
type Removal struct {
	Sweep   string    `json:"sweep"`
	Name    string    `json:"name"`          // the spec's name, from the run
	Ref     string    `json:"ref,omitempty"` // the ref it tested
	RunDate time.Time `json:"run_date"`      // the run's date (Run.Date)
	Cells   int       `json:"cells"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
}

// MaxReason bounds a removal's reason, in bytes.
const MaxReason = 4096

// Check refuses a removal that cannot be recorded: no sweep, no one who
// removed it, an empty, oversized or non-UTF-8 reason.
func (r Removal) Check() error {
	switch {
	case r.Sweep == "":
		return fmt.Errorf("removal: no sweep id")
	case strings.TrimSpace(r.Reason) == "":
		return fmt.Errorf("removal: no reason (--reason says why the run goes, for whoever finds it missing)")
	case strings.TrimSpace(r.By) == "":
		return fmt.Errorf("removal: no one who removed it (give --author, or set git's user.name or $USER)")
	case len(r.Reason) > MaxReason:
		return fmt.Errorf("removal: reason of %d bytes, over the %d allowed", len(r.Reason), MaxReason)
	case !utf8.ValidString(r.Reason) || !utf8.ValidString(r.By):
		return fmt.Errorf("removal: reason or author is not UTF-8")
	}
	return nil
}

// Of completes the removal with what it records of the run: its spec,
// ref, date and number of cells.
func (r Removal) Of(run *testrun.Run) Removal {
	r.Sweep, r.Name, r.Ref, r.RunDate, r.Cells = run.ID, run.Name, run.Ref, run.Date(), len(run.Cells)
	return r
}

// String is the removal on one line: "run ID (spec NAME, 12 cells, run
// 2026-12-01) removed by AUTHOR on 2026-12-03 10:04: REASON".
func (r Removal) String() string {
	spec := "spec " + r.Name
	if r.Ref != "" {
		spec += " at " + r.Ref
	}
	return fmt.Sprintf("run %s (%s, %d cells, run %s) removed by %s on %s: %s", r.Sweep, spec, r.Cells,
		r.RunDate.UTC().Format("2006-01-02"), r.By, r.At.UTC().Format("2006-01-02 15:04"), strings.Join(strings.Fields(r.Reason), " "))
}

// Matches reports whether the removal is of a run q would have selected
// by its own fields (spec name and ref, run date); cell filters cannot
// be told of a run that is gone and select every removal.
func (r Removal) Matches(q Query) bool {
	return (!q.Named || r.Name == q.Name && r.Ref == q.Ref) && (q.Spec == "" || r.Name == q.Spec) &&
		(q.From.IsZero() || !r.RunDate.Before(q.From)) && (q.To.IsZero() || !r.RunDate.After(q.To))
}

// Forget removes the runs ids from h, recording each removal (rm, with
// the run's own fields) in the same step; notes on the runs stay. A sweep
// id h does not hold is an error naming it, and nothing is removed: the
// caller lists what it meant to remove, and a typo must not take the
// others with it.
func Forget(h History, ids []string, rm Removal) ([]Removal, error) {
	if err := Opened(h); err != nil {
		return nil, err
	}
	for _, id := range ids {
		r, err := h.Get(id)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, notStored(h, id)
		}
	}
	var done []Removal
	for _, id := range ids {
		rm.Sweep = id
		got, ok, err := h.Forget(id, rm)
		if err != nil {
			return done, err
		}
		if ok {
			done = append(done, got)
		}
	}
	return done, nil
}

// notStored is the error of a run to forget that h does not hold: a
// usage error, which says who removed it when it was removed already.
func notStored(h History, id string) error {
	all, err := h.Removals()
	if err != nil {
		return err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Sweep == id {
			return fail.Usagef("run %q is not in %s: it was removed already (%s); nothing was removed", id, h, all[i])
		}
	}
	return fail.Usagef("run %q is not in %s (kvsweep report --history lists the stored runs); nothing was removed", id, h)
}
