package main

import (
	"path/filepath"

	"github.com/kvsweep/kvsweep/reports"
)

// demoReport collects the demo sweep into a store of its own and prints
// its summary.
func demoReport(e *env, dir string) error {
	run, err := collect(e, dir, &schedOpts{scheduler: "local"}, reports.DefaultMaxResultSize)
	if err != nil {
		return err
	}
	st, err := reports.OpenStore(filepath.Join(filepath.Dir(dir), "history.db"), false)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Put(run); err != nil {
		return err
	}
	return reports.WriteSummary(e.stdout, "table", run)
}
