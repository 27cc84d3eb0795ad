package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/examples"
)

func init() {
	register(&command{
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
				specDir := filepath.Join(*out, "spec")
				if err := examples.WriteTo(specDir); err != nil {
					return err
				}
				sweepDir := filepath.Join(*out, "sweep")
				if _, err := os.Stat(sweepDir); err == nil {
					return fmt.Errorf("%s exists: choose another --out, or remove it", sweepDir)
				}
				ro := &renderOpts{out: sweepDir}
				m, err := ro.render(filepath.Join(specDir, examples.Quickstart))
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "rendered sweep %s: %d cells under %s\n", m.SweepID, len(m.Cells), sweepDir)
				so := &submitOpts{sched: &schedOpts{scheduler: "local"}, overrides: map[string]*string{}}
				if err := so.submit(e, sweepDir, nil); err != nil {
					return err
				}
				return demoReport(e, sweepDir)
			}
		},
	})
}
