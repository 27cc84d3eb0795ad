package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
)

// sweepCells is one sweep's cells in the status of several.
type sweepCells struct {
	Dir    string                 `json:"dir"`
	Cells  []scheduler.CellStatus `json:"cells"`
	Counts map[string]int         `json:"counts"`
	err    error
}

// statusMany polls, or follows, the sweeps in dirs at once: one
// goroutine each, their Slurm polls shared through the user's poll cache
// (one sacct and one squeue per interval for all of them), what each says
// on stderr prefixed with its directory. A sweep that fails is said and
// the others go on.
func statusMany(e *env, dirs []string, cfg *scheduler.Config, w watching, format string) error {
	out := make([]sweepCells, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() {
			out[i] = sweepCells{Dir: dir}
			out[i].Cells, out[i].err = statusOne(&env{stdout: e.stdout, stderr: lane.Prefixed(e.stderr, dir)}, dir, cfg, w)
			out[i].Counts = scheduler.Counts(out[i].Cells)
		})
	}
	wg.Wait()
	if err := writeStatuses(e.stdout, out, format); err != nil {
		return err
	}
	failed := 0
	for _, s := range out {
		if s.err != nil {
			failed++
			if msg := s.err.Error(); strings.HasPrefix(msg, s.Dir) {
				fmt.Fprintf(e.stderr, "kvsweep: %s\n", msg)
			} else {
				fmt.Fprintf(e.stderr, "kvsweep: %s: %s\n", s.Dir, msg)
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("no status for %d of %d sweeps (said above)", failed, len(dirs))
	}
	return nil
}

// writeStatuses writes each sweep that was read: a table under a heading
// naming its directory, or one JSON list.
func writeStatuses(w io.Writer, sweeps []sweepCells, format string) error {
	read := make([]sweepCells, 0, len(sweeps))
	for _, s := range sweeps {
		if s.err == nil {
			read = append(read, s)
		}
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(read)
	}
	for i, s := range read {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if format == "markdown" {
			fmt.Fprintf(w, "## %s\n\n", s.Dir)
		} else {
			fmt.Fprintf(w, "%s\n", s.Dir)
		}
		if err := scheduler.WriteStatus(w, s.Cells, format); err != nil {
			return err
		}
	}
	return nil
}
