package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/scheduler"
)

func init() { register(runCmd) }

var runCmd = &command{
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
			if _, err := prepare(e, ro, path); err != nil {
				return err
			}
			if err := submit(e, so, ro.Out, nil); err != nil || !*wait || so.Opts.DryRun {
				return err
			}
			cells, err := watchSweep(e, ro.Out, so.Sched, *interval, so.Quiet, so.Opts)
			if err != nil {
				return err
			}
			return scheduler.WriteStatus(e.stdout, cells, "table")
		}
	},
}
