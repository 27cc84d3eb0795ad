package testrun

import (
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
)

// collected collects the committed sweep NAME (sweeptest.Dir).
func collected(t testing.TB, name string) *Run {
	t.Helper()
	return collectDir(t, sweeptest.Dir(name))
}

// collectDir collects the sweep in dir with the states its journal
// records, as kvsweep collect does.
func collectDir(t testing.TB, dir string) *Run {
	t.Helper()
	run, err := Collect(dir, CollectOptions{States: sweeptest.States(t, dir), Now: sweeptest.Now})
	sweeptest.Must(t, err)
	return run
}
