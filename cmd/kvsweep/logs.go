package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

func init() { register(logsCmd) }

var logsCmd = &command{
	name:    "logs",
	args:    "DIR CELL [-f]",
	summary: "Show the tails of a cell's logs: job output, services, agent",
	help: `CELL is a cell id or name. Prints the last --lines lines of each log the
cell's job wrote (its output, etcd, services/*.log, remote/*.log), as
kvsweep ci does for failing cells. With -f it then follows the job's
output until the cell ends (or Ctrl-C).`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		cfg := querySchedFlags(fs)
		lines := fs.IntP("lines", "n", 40, "lines of each log")
		follow := fs.BoolP("follow", "f", false, "follow the job's output until the cell ends")
		interval := fs.Duration("interval", time.Second, "with -f: time between reads")
		return func(e *env, args []string) error {
			if len(args) != 2 {
				return usagef("expected the sweep directory and a cell, got %d arguments", len(args))
			}
			dir := args[0]
			m, err := sweep.ReadManifest(dir)
			if err != nil {
				return err
			}
			var id string
			for _, c := range m.Cells {
				if c.ID == args[1] || c.Name == args[1] {
					id = c.ID
				}
			}
			if id == "" {
				return usagef("%q is neither the id nor the name of a cell of sweep %s", args[1], m.SweepID)
			}
			if !*follow {
				lane.WriteLogTails(e.stdout, dir, id, *lines)
				return nil
			}
			return followLog(e, dir, id, cfg, *lines, *interval)
		}
	},
}

// followLog prints the tail of the cell's job output, then what it gains,
// until the scheduler says the cell ended (lane.FollowLog).
func followLog(e *env, dir, cellID string, cfg *scheduler.Config, n int, interval time.Duration) error {
	ctx, stop := interruptible()
	defer stop()
	l := schedLane(e, cfg, "")
	l.Interval = interval
	return l.FollowLog(ctx, dir, cellID, n)
}
