package main

import (
	"errors"

	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
)

// tools are the parts of a lane the full build links (full.go sets
// them); as they are here, a build with -tags lite refuses what needs
// them.
var tools = lane.Tools{NoBinary: lane.ErrLite}

// migrateStore brings the schema of the database at a postgres:// URL to
// this kvsweep's version (full.go sets it).
var migrateStore = func(string) (string, error) {
	return "", errors.Join(errors.New("a postgres:// history store needs the PostgreSQL driver"), lane.ErrLite)
}

// newLane is a lane that says what it does on e, with this build's tools
// and progress display.
func newLane(e *env) *lane.Lane {
	t := tools
	t.Version = version()
	return &lane.Lane{Stdout: e.stdout, Stderr: e.stderr, Tools: t,
		Progress: func(quiet bool) func([]scheduler.CellStatus) { return waitProgress(e, quiet) }}
}

// schedLane is a lane over the sweeps of one scheduler configuration and
// history store.
func schedLane(e *env, cfg *scheduler.Config, store string) *lane.Lane {
	l := newLane(e)
	l.Submit.Sched, l.Submit.Store = cfg, store
	return l
}
