// Package sweeptest serves the tests of the packages that read collected
// sweeps (testrun, analysis, reports): the committed sweep directories
// under testrun/testdata, copies of them a test may change, and the
// scheduler's word on their cells as kvsweep collect asks for it.
package sweeptest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// Now is the collection time of the committed sweeps in tests, so that
// their reports are the same bytes on every run.
var Now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// Dir is the committed sweep NAME (base, cand, mixed).
func Dir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testrun", "testdata", name)
}

// Copy copies the committed sweep NAME into a directory of the test's,
// for a test that changes it.
func Copy(t testing.TB, name string) string {
	t.Helper()
	src := Dir(name)
	dst := filepath.Join(t.TempDir(), "sweep")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

// States is the scheduler's word on each cell of the sweep in dir, from
// the states its journal records, as kvsweep collect asks for it.
func States(t testing.TB, dir string) map[string]sweep.CellState {
	t.Helper()
	states, err := scheduler.States(context.Background(), dir, &scheduler.Local{Dir: dir}, func(err error) { t.Fatal(err) })
	if err != nil {
		t.Fatal(err)
	}
	return states
}

// Must fails the test on an error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
