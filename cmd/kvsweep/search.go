package main

import (
	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/loadsearch"
	"github.com/kvsweep/kvsweep/scheduler"
)

func init() { register(searchCmd) }

var searchCmd = &command{name: "search", args: loadsearch.Args, summary: loadsearch.Summary, help: loadsearch.Help,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := loadsearch.Flags(fs, history.DefaultStorePath())
		return func(e *env, args []string) error {
			ctx, stop := interruptible()
			defer stop()
			_, err := loadsearch.Main(ctx, schedLane(e, &scheduler.Config{Name: o.Scheduler}, o.Store), args, *o)
			return err
		}
	}}
