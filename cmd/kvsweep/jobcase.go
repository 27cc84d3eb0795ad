package main

import (
	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/cachectl"
)

// jobCaseCmd is in every build: a harness runs it around each case.
var jobCaseCmd = &command{name: "case", args: "start|end [--] CASE", help: cachectl.Help, summary: "Set a case's cache state and mark its start, or mark its end, in case-windows.jsonl",
	setup: func(*pflag.FlagSet) func(*env, []string) error {
		return func(e *env, a []string) error { return cachectl.Command(a, e.stdout) }
	}}
