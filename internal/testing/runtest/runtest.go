// Package runtest collects the committed test sweeps for the tests of the
// packages above testrun (analysis, reports). Tests only.
package runtest

import (
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/testrun"
)

// Collected collects the committed sweep NAME (sweeptest.Dir).
func Collected(t testing.TB, name string) *testrun.Run {
	t.Helper()
	return CollectDir(t, sweeptest.Dir(name))
}

// CollectDir collects the sweep in dir with the states its journal
// records, as kvsweep collect does, at sweeptest.Now.
func CollectDir(t testing.TB, dir string) *testrun.Run {
	t.Helper()
	run, err := testrun.Collect(dir, testrun.CollectOptions{States: sweeptest.States(t, dir), Now: sweeptest.Now})
	sweeptest.Must(t, err)
	return run
}
