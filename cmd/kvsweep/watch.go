package main

import (
	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/live"
)

func init() {
	register(&command{name: "watch", args: "DIR...", summary: live.Summary, help: live.Help, setup: watchSetup})
}

// watchSetup is kvsweep watch: the live view (package live).
func watchSetup(fs *pflag.FlagSet) func(*env, []string) error {
	cfg, o := querySchedFlags(fs), live.Flags(fs)
	return func(e *env, args []string) error { return o.Run(schedLane(e, cfg, ""), args) }
}
