package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/testing/runtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/testrun"
)

// Forgetting a run removes it from every read and query (the index or
// tables keep nothing of it), records who removed it, when and why, and
// keeps the sweep's notes; a removal without a reason, of a run not
// stored, or through a read-only store changes nothing.
func forget(t *testing.T, loc string) {
	st := open(t, loc, false)
	var runs []*testrun.Run
	for _, name := range []string{"mixed", "cand", "base"} {
		r := runtest.Collected(t, name)
		sweeptest.Must(t, st.Put(r))
		runs = append(runs, r)
	}
	gone := runs[2]
	sweeptest.Must(t, st.AddNote(testrun.Note{Sweep: gone.ID, Author: "tester", Time: sweeptest.Now, Text: "n3 was throttled"}))
	rm := history.Removal{By: "tester", At: sweeptest.Now.Add(time.Hour), Reason: "node n3 was throttled: every figure is wrong"}
	if _, err := history.Forget(st, []string{gone.ID, "no-such-sweep"}, rm); err == nil {
		t.Fatal("forgetting a run not stored was not refused")
	}
	if _, _, err := st.Forget(gone.ID, history.Removal{By: "tester", At: sweeptest.Now}); err == nil {
		t.Error("a removal without a reason was recorded")
	}
	if n, _ := st.Count(); n != 3 {
		t.Fatalf("%d runs after refused removals, want 3", n)
	}
	done, err := history.Forget(st, []string{gone.ID}, rm)
	sweeptest.Must(t, err)
	want := rm.Of(gone)
	if len(done) != 1 || done[0].String() != want.String() {
		t.Fatalf("removals made: %v, want [%v]", done, want)
	}
	forgotten(t, st, gone, runs[:2])
	if _, ok, err := st.Forget(gone.ID, rm); ok || err != nil {
		t.Errorf("forgetting it again: %v, %v; want false, nil", ok, err)
	}
	recorded, err := st.Removals()
	sweeptest.Must(t, err)
	if len(recorded) != 1 || recorded[0].String() != want.String() || !recorded[0].At.Equal(rm.At) {
		t.Errorf("removals recorded: %v, want [%v]", recorded, want)
	}
	// Stored again, the run is back with its notes.
	sweeptest.Must(t, st.Put(gone))
	got, err := st.Get(gone.ID)
	sweeptest.Must(t, err)
	if got == nil || len(got.Notes) != 1 {
		t.Errorf("stored again: %v, want the run with its note", got)
	}
	sweeptest.Must(t, st.Close())
	ro := open(t, loc, true)
	if _, _, err := ro.Forget(gone.ID, rm); err == nil {
		t.Error("a read-only store removed a run")
	}
}

// forgotten checks that gone is in no read of st and that the others
// are.
func forgotten(t *testing.T, st history.History, gone *testrun.Run, others []*testrun.Run) {
	t.Helper()
	if r, err := st.Get(gone.ID); r != nil || err != nil {
		t.Errorf("Get of a run removed: %v, %v", r, err)
	}
	all, err := st.Runs()
	sweeptest.Must(t, err)
	if len(all) != len(others) {
		t.Errorf("%d runs after the removal, want %d", len(all), len(others))
	}
	for _, q := range []history.Query{{}, {Spec: gone.Name}, {Named: true, Name: gone.Name, Ref: gone.Ref},
		{Named: true, Name: gone.Name, Ref: gone.Ref, Newest: true}, {From: gone.Date(), To: gone.Date()}} {
		got, err := st.Query(q)
		sweeptest.Must(t, err)
		if slices.ContainsFunc(got, func(r *testrun.Run) bool { return r.ID == gone.ID }) {
			t.Errorf("Query(%+v) still returns the run removed", q)
		}
		if g, w := hashes(t, got), hashes(t, history.Apply(all, q)); !slices.Equal(g, w) {
			t.Errorf("Query(%+v) after the removal:\n got %v\nwant %v", q, g, w)
		}
	}
}
