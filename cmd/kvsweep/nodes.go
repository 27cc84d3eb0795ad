package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/reports"
)

func init() { register(nodesCmd) }

var nodesCmd = &command{
	name:    "nodes",
	args:    "[--window 168h]",
	summary: "The bad-node ledger: nodes by failures outside the test across sweeps",
	help: `Lists the nodes on which attempts failed outside the test (NODE_FAIL, PREEMPTED,
BOOT_FAIL, DEADLINE, LOST, a job that never started its harness; GPU_FAULT:
the GPUs failed under it, with the counters that rose, "xid x1"), across the
runs in the history store collected within --window, most failures first,
with the states and how many sweeps saw them. A retried attempt counts too,
so a cell that passed on its second node still marks the first. submit, run
and ci take --exclude-bad-nodes N to keep nodes with N such failures out.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		store := fs.String("store", history.DefaultStorePath(), "history store")
		window := fs.Duration("window", 7*24*time.Hour, "count runs collected this far back (0: all)")
		format := fs.String("format", "table", "table, markdown or json")
		return func(e *env, args []string) error {
			if len(args) != 0 {
				return usagef("expected no arguments, got %d", len(args))
			}
			if err := oneOf("format", *format, "table", "markdown", "json"); err != nil {
				return err
			}
			h := history.OpenLazy(*store, true)
			defer h.Close()
			ledger, err := analysis.LedgerFromStore(h, *window, time.Now())
			if err != nil {
				return err
			}
			return reports.WriteNodes(e.stdout, *format, ledger)
		}
	},
}
