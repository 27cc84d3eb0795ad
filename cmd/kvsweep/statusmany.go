package main

import (
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
)

// statusMany polls, or follows, the sweeps in dirs at once, what each
// says on stderr prefixed with its directory. A sweep that fails is said
// and the others go on.
func statusMany(e *env, dirs []string, cfg *scheduler.Config, w watching, format string) error {
	out := lane.Statuses(dirs, func(dir string) ([]scheduler.CellStatus, error) {
		return statusOne(&env{stdout: e.stdout, stderr: lane.Prefixed(e.stderr, dir)}, dir, cfg, w)
	})
	if err := scheduler.WriteStatuses(e.stdout, out, format); err != nil {
		return err
	}
	failed := 0
	for _, s := range out {
		if s.Err == nil {
			continue
		}
		failed++
		if msg := s.Err.Error(); strings.HasPrefix(msg, s.Dir) {
			fmt.Fprintf(e.stderr, "kvsweep: %s\n", msg)
		} else {
			fmt.Fprintf(e.stderr, "kvsweep: %s: %s\n", s.Dir, msg)
		}
	}
	if failed > 0 {
		return fmt.Errorf("no status for %d of %d sweeps (said above)", failed, len(dirs))
	}
	return nil
}
