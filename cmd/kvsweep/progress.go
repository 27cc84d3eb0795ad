package main

import (
	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/internal/progress"
	"github.com/kvsweep/kvsweep/scheduler"
)

// quietFlag is --quiet of the commands that wait: no progress at all.
func quietFlag(fs *pflag.FlagSet) *bool {
	return fs.BoolP("quiet", "q", false, "show no progress while waiting")
}

// waitProgress shows a wait on the cells on stderr (internal/progress).
func waitProgress(e *env, quiet bool) func([]scheduler.CellStatus) {
	show := progress.Wait(e.stderr, quiet)
	return func(cells []scheduler.CellStatus) {
		n, done := scheduler.Ended(cells)
		show(progress.Tally{Total: n, Done: done, Line: scheduler.CountsLine(cells)})
	}
}
