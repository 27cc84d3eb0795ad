package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/sbatch"
)

func init() {
	register(&command{
		name:    "run",
		args:    "SPEC --out DIR [--wait]",
		summary: "Plan, render and submit a sweep in one step (and wait for it)",
		help: `The same as kvsweep render SPEC --out DIR, then kvsweep submit DIR, then
with --wait kvsweep status DIR --watch. With the local executor (the
quickstart spec's scheduler) the sweep runs on this machine.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			ro := renderFlags(fs)
			so := submitFlags(fs)
			wait := fs.Bool("wait", false, "wait until every cell is terminal, then print the status")
			interval := fs.Duration("interval", 10*time.Second, "time between polls with --wait")
			return func(e *env, args []string) error {
				path, err := oneArg(args, "the spec file")
				if err != nil {
					return err
				}
				m, err := ro.render(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "rendered sweep %s: %d cells in %d job scripts under %s\n", m.SweepID, len(m.Cells), len(m.Jobs), ro.out)
				if err := so.submit(e, ro.out, nil); err != nil {
					return err
				}
				if !*wait || so.dryRun {
					return nil
				}
				_, sched, err := so.sched.open(e, ro.out)
				if err != nil {
					return err
				}
				if err := watchSweep(e, ro.out, sched, *interval); err != nil {
					return err
				}
				cells, _, err := sbatch.Status(context.Background(), ro.out, sched)
				if err != nil {
					return err
				}
				return sbatch.WriteStatus(e.stdout, cells, "table")
			}
		},
	})
}
