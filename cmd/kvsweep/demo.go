package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/examples"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(demoCmd) }

var demoCmd = &command{
	name:    "demo",
	args:    "[--out DIR]",
	summary: "Run the embedded quickstart sweep on this machine, then report it",
	help: `Writes the embedded quickstart spec and the simulated Phase 1 harness to
DIR/spec, then runs the sweep with the local executor into DIR/sweep-N (the
first N not taken, so the demo can be run again), collects it into the
history store that report --history reads (--store) and prints the report.
Needs bash and python3; no cluster, GPU or container.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		out := fs.String("out", "kvsweep-demo", "directory for the spec and the sweeps")
		store := fs.String("store", history.DefaultStorePath(), "history store the run is collected into")
		return func(e *env, args []string) error {
			if len(args) != 0 {
				return usagef("demo takes no arguments")
			}
			specDir := filepath.Join(*out, "spec")
			sweepDir, err := nextFree(*out, "sweep-")
			if err != nil {
				return err
			}
			if err := examples.WriteTo(specDir); err != nil {
				return err
			}
			if _, err := prepare(e, &lane.RenderOptions{Out: sweepDir}, filepath.Join(specDir, examples.Quickstart)); err != nil {
				return err
			}
			local := &scheduler.Config{Name: "local"}
			if err := submit(e, &lane.SubmitOptions{Sched: local}, sweepDir, nil); err != nil {
				return err
			}
			run, err := schedLane(e, local, *store).Collect(sweepDir, testrun.CollectOptions{}, "")
			if err != nil {
				return err
			}
			if err := reports.WriteSummary(e.stdout, "table", run); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "\nThe sweep is in %s; its run is in the history store %s.\nNext: kvsweep report %s --format html > report.html, kvsweep report --history\n", sweepDir, history.Redact(*store), sweepDir)
			return nil
		}
	},
}

// nextFree is DIR/PREFIXN for the first N from 1 that does not exist.
func nextFree(dir, prefix string) (string, error) {
	for n := 1; n < 10000; n++ {
		p := filepath.Join(dir, prefix+strconv.Itoa(n))
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%s holds 9999 demo sweeps: remove some, or give another --out", dir)
}
