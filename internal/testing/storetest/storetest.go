// Package storetest is the history store's test suite: one suite, the
// same assertions, run against every backend (the bbolt file in package
// history/bolt's tests, PostgreSQL in package history/pg's). Tests only.
package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/testing/runtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// Run runs the suite; fresh returns the location (a path or a URL) of a
// new, empty store for each test.
func Run(t *testing.T, fresh func(t *testing.T) string) {
	for _, tc := range []struct {
		name string
		test func(t *testing.T, loc string)
	}{
		{"RoundTrip", roundTrip},
		{"ReplaceKeepsNotes", replaceKeepsNotes},
		{"NotesInOrder", notesInOrder},
		{"ReadOnly", readOnly},
		{"ConcurrentWriters", concurrentWriters},
		{"QueryAgrees", queryAgrees},
		{"Forget", forget},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, fresh(t)) })
	}
}

func open(t *testing.T, loc string, readOnly bool) history.History {
	t.Helper()
	st, err := history.Open(loc, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func hash(t *testing.T, r *testrun.Run) string {
	t.Helper()
	h, err := history.ContentHash(r)
	sweeptest.Must(t, err)
	return h
}

// The committed sweeps' runs read back as they were put, in date order;
// a sweep not stored is nil.
func roundTrip(t *testing.T, loc string) {
	st := open(t, loc, false)
	want := map[string]string{}
	for _, name := range []string{"mixed", "cand", "base"} {
		r := runtest.Collected(t, name)
		sweeptest.Must(t, st.Put(r))
		want[r.ID] = hash(t, r)
	}
	for id, h := range want {
		got, err := st.Get(id)
		sweeptest.Must(t, err)
		if got == nil || hash(t, got) != h {
			t.Errorf("Get(%s) is not the run put", id)
		}
	}
	if r, err := st.Get("no-such-sweep"); err != nil || r != nil {
		t.Errorf("Get of a sweep not stored: %v, %v; want nil, nil", r, err)
	}
	runs, err := st.Runs()
	sweeptest.Must(t, err)
	if len(runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(runs), len(want))
	}
	for i, r := range runs {
		if hash(t, r) != want[r.ID] {
			t.Errorf("Runs: %s is not the run put", r.ID)
		}
		if i > 0 && runs[i-1].Date().After(r.Date()) {
			t.Errorf("Runs: %s (%v) after %s (%v)", r.ID, r.Date(), runs[i-1].ID, runs[i-1].Date())
		}
	}
	// Another handle (another process) sees the same.
	sweeptest.Must(t, st.Close())
	other := open(t, loc, true)
	again, err := other.Runs()
	sweeptest.Must(t, err)
	if len(again) != len(runs) {
		t.Errorf("a second reader sees %d runs, want %d", len(again), len(runs))
	}
}

// Collecting a sweep again replaces its run and keeps its notes.
func replaceKeepsNotes(t *testing.T, loc string) {
	st := open(t, loc, false)
	r := runtest.Collected(t, "base")
	sweeptest.Must(t, st.Put(r))
	note := testrun.Note{Sweep: r.ID, Author: "tester", Time: sweeptest.Now, Text: "TC-06 flaky on n2"}
	sweeptest.Must(t, st.AddNote(note))
	again := *r
	again.Cells = r.Cells[:1]
	again.CollectedAt = r.CollectedAt.Add(time.Hour)
	sweeptest.Must(t, st.Put(&again))
	got, err := st.Get(r.ID)
	sweeptest.Must(t, err)
	if got == nil || len(got.Cells) != 1 || !got.CollectedAt.Equal(again.CollectedAt) {
		t.Fatalf("after a re-collect: %+v, want the new run of 1 cell", got)
	}
	if len(got.Notes) != 1 || fmt.Sprint(got.Notes[0]) != fmt.Sprint(note) {
		t.Errorf("notes after a re-collect: %v, want [%v]", got.Notes, note)
	}
	runs, err := st.Runs()
	sweeptest.Must(t, err)
	if len(runs) != 1 {
		t.Errorf("%d runs after a re-collect, want 1", len(runs))
	}
}

// Notes come back in the order they were written, each with its run; a
// note may come before its run; a note that cannot be stored is refused.
func notesInOrder(t *testing.T, loc string) {
	st := open(t, loc, false)
	var want []testrun.Note
	for i := range 5 {
		n := testrun.Note{Sweep: "later-1", Author: "tester", Time: sweeptest.Now.Add(time.Duration(5-i) * time.Minute), Text: fmt.Sprintf("finding %d", i)}
		if i == 2 {
			n.Cell = "vllm-aggregated"
		}
		sweeptest.Must(t, st.AddNote(n))
		want = append(want, n)
	}
	sweeptest.Must(t, st.AddNote(testrun.Note{Sweep: "other-1", Author: "tester", Time: sweeptest.Now, Text: "elsewhere"}))
	if err := st.AddNote(testrun.Note{Sweep: "later-1", Author: "tester", Text: " "}); err == nil {
		t.Error("an empty note was stored")
	}
	sweeptest.Must(t, st.Put(&testrun.Run{ID: "later-1", Name: "later", CollectedAt: sweeptest.Now}))
	got, err := st.Get("later-1")
	sweeptest.Must(t, err)
	if fmt.Sprint(got.Notes) != fmt.Sprint(want) {
		t.Errorf("notes:\n%v\nwant\n%v", got.Notes, want)
	}
	runs, err := st.Runs()
	sweeptest.Must(t, err)
	if len(runs) != 1 || fmt.Sprint(runs[0].Notes) != fmt.Sprint(want) {
		t.Errorf("Runs: %d runs, notes %v", len(runs), runs)
	}
}

// A store opened read-only reads and refuses to write.
func readOnly(t *testing.T, loc string) {
	w := open(t, loc, false)
	r := runtest.Collected(t, "cand")
	sweeptest.Must(t, w.Put(r))
	sweeptest.Must(t, w.Close())
	ro := open(t, loc, true)
	got, err := ro.Get(r.ID)
	sweeptest.Must(t, err)
	if got == nil {
		t.Fatal("a reader does not see the run")
	}
	if err := ro.Put(&testrun.Run{ID: "x-1", Name: "x"}); err == nil {
		t.Error("a read-only store took a run")
	}
	if err := ro.AddNote(testrun.Note{Sweep: r.ID, Author: "a", Time: sweeptest.Now, Text: "t"}); err == nil {
		t.Error("a read-only store took a note")
	}
}

// Eight writers storing runs of their own and eight storing the same
// sweep again, at once, each with a handle of its own (as kvsweep
// collects in several processes do), while a reader reads: every run is
// there once and whole, the notes of the sweep written again are kept,
// and the reader never saw a run in part.
func concurrentWriters(t *testing.T, loc string) {
	shared := bigRun("shared-1", 40)
	st := open(t, loc, false)
	sweeptest.Must(t, st.Put(shared))
	sweeptest.Must(t, st.AddNote(testrun.Note{Sweep: shared.ID, Author: "tester", Time: sweeptest.Now, Text: "kept"}))
	sweeptest.Must(t, st.Close())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 16 {
		wg.Go(func() {
			for i := range 3 {
				run := bigRun(fmt.Sprintf("w%02d-%d", w, i), 40)
				if w >= 8 {
					run = bigRun(shared.ID, 40+w)
				}
				if err := withStore(loc, false, func(h history.History) error { return h.Put(run) }); err != nil {
					errs <- err
				}
			}
		})
	}
	stop := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			err := withStore(loc, true, func(h history.History) error {
				runs, err := h.Runs()
				for _, r := range runs {
					if err == nil {
						err = whole(r)
					}
				}
				return err
			})
			if err != nil {
				errs <- fmt.Errorf("a reader: %v", err)
				return
			}
			// A pause between reads, as between commands: a reader
			// that never lets go would keep the bbolt file's writers
			// (who need its lock alone) waiting.
			time.Sleep(20 * time.Millisecond)
		}
	})
	wg.Wait()
	close(stop)
	reader.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st = open(t, loc, true)
	runs, err := st.Runs()
	sweeptest.Must(t, err)
	seen := map[string]int{}
	for _, r := range runs {
		seen[r.ID]++
		if err := whole(r); err != nil {
			t.Error(err)
		}
	}
	if len(runs) != 8*3+1 {
		t.Errorf("%d runs, want %d", len(runs), 8*3+1)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("run %s stored %d times", id, n)
		}
	}
	got, err := st.Get(shared.ID)
	sweeptest.Must(t, err)
	if len(got.Notes) != 1 || got.Notes[0].Text != "kept" {
		t.Errorf("the notes of the sweep written again: %v", got.Notes)
	}
}

// withStore opens the store, runs f on it and closes it.
func withStore(loc string, readOnly bool, f func(history.History) error) error {
	h, err := history.Open(loc, readOnly)
	if err != nil {
		return err
	}
	defer h.Close()
	return f(h)
}

// bigRun is a run of n cells, each with a case and two metrics; its name
// says how many cells it has, so that a reader can tell a whole run.
func bigRun(id string, n int) *testrun.Run {
	run := &testrun.Run{ID: id, Name: fmt.Sprintf("cells-%d", n), CollectedAt: sweeptest.Now}
	for c := range n {
		run.Cells = append(run.Cells, testrun.CellResult{
			CellID: fmt.Sprintf("%012d", c), Name: fmt.Sprintf("cell-%d", c), Outcome: testrun.OK,
			Params: map[string]string{"engine": "vllm"},
			Cases: []result.Case{{ID: "TC-01", Verdict: result.Pass, Metrics: result.Metrics{
				{Name: "ttft_ms", Value: float64(c), Unit: "ms", Direction: "lower"},
				{Name: "hit_rate", Value: 0.5, Direction: "higher"},
			}}},
		})
	}
	return run
}

// whole says what is wrong with a run bigRun made that is not whole.
func whole(r *testrun.Run) error {
	var n int
	if _, err := fmt.Sscanf(r.Name, "cells-%d", &n); err != nil {
		return nil // not one of bigRun's
	}
	if len(r.Cells) != n {
		return fmt.Errorf("run %s with %d of its %d cells", r.ID, len(r.Cells), n)
	}
	return nil
}
