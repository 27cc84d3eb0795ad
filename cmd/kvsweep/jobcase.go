package main

import (
	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/cachectl"
	"github.com/kvsweep/kvsweep/profiling"
)

// jobCaseCmd is in every build: a harness runs it around each case.
var jobCaseCmd = &command{name: "case", args: "start|end [--] CASE | wrap WORKER -- CMD...", help: cachectl.Help + "\n\n" + profiling.Help, summary: "Set a case's cache state and mark its start, or mark its end, in case-windows.jsonl; run a worker under its profiler",
	setup: func(*pflag.FlagSet) func(*env, []string) error {
		return func(e *env, a []string) error { return profiling.Command(a, e.stdout, cachectl.Command) }
	}}
