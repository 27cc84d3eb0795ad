package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/examples"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/scheduler"
)

func init() { register(demoCmd) }

var demoCmd = &command{
	name:    "demo",
	args:    "[--out DIR]",
	summary: "Run the embedded quickstart sweep on this machine, then report it",
	help: `Writes the embedded quickstart spec and the simulated Phase 1 harness to
DIR/spec, then runs the sweep with the local executor into DIR/sweep and
prints the report. Needs bash and python3; no cluster, GPU or container.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		out := fs.String("out", "kvsweep-demo", "directory for the spec, the sweep and the report")
		return func(e *env, args []string) error {
			if len(args) != 0 {
				return usagef("demo takes no arguments")
			}
			specDir, sweepDir := filepath.Join(*out, "spec"), filepath.Join(*out, "sweep")
			if _, err := os.Stat(sweepDir); err == nil {
				return fmt.Errorf("%s exists: choose another --out, or remove it", sweepDir)
			}
			if err := examples.WriteTo(specDir); err != nil {
				return err
			}
			ro := &renderOpts{out: sweepDir}
			if err := ro.render(e, filepath.Join(specDir, examples.Quickstart)); err != nil {
				return err
			}
			local := &scheduler.Config{Name: "local"}
			if err := (&submitOpts{sched: local}).submit(e, sweepDir, nil); err != nil {
				return err
			}
			// The demo's runs go to a store of its own, beside the sweep.
			run, err := collect(e, sweepDir, local, reports.CollectOptions{}, filepath.Join(*out, "history.db"))
			if err != nil {
				return err
			}
			return reports.WriteSummary(e.stdout, "table", run)
		}
	},
}
