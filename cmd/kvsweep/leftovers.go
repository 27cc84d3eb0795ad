package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// removeLeftovers removes the containers the sweep's killed tasks left
// (of the cells ended says have ended) and says so; not reaching docker
// is a warning, never a failure of the command it follows.
func removeLeftovers(e *env, dir string, ended func(cellID string) bool) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return
	}
	removed, err := scheduler.RemoveLeftovers(context.Background(), m, ended)
	if err != nil {
		fmt.Fprintf(e.stderr, "kvsweep: warning: could not look for containers killed tasks of the sweep left: %v\n", err)
		return
	}
	if len(removed) > 0 {
		fmt.Fprintf(e.stderr, "kvsweep: removed %d container(s) that killed tasks of the sweep left: %s\n", len(removed), strings.Join(removed, ", "))
	}
}

// endedIn says which of a status poll's cells have ended.
func endedIn(cells []scheduler.CellStatus) func(string) bool {
	ended := make(map[string]bool, len(cells))
	for _, c := range cells {
		ended[c.ID] = scheduler.Terminal(c.State)
	}
	return func(id string) bool { return ended[id] }
}
