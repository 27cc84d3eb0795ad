package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/gpuhealth"
)

// jobHealthCmd is in every build: every job runs it before and after its harness.
var jobHealthCmd = &command{name: "health", args: "--out FILE [--before FILE --fault FILE --log FILE]", help: gpuhealth.Help,
	summary: "Snapshot this node's GPU health counters; with --before, record the faults since",
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		out, before := fs.String("out", "", "the snapshot file (required)"), fs.String("before", "", "the first snapshot, to compare with")
		fault, log := fs.String("fault", "", "where the faults since --before go"), fs.String("log", "", "the file each fault is appended to")
		node, job := fs.String("node", "", "this node's name"), fs.String("job", "", "the job's id")
		return func(e *env, _ []string) error {
			if *out == "" {
				return usagef("--out FILE is required")
			}
			ctx, stop := interruptible()
			defer stop()
			o := gpuhealth.Options{SMI: os.Getenv("KVSWEEP_NVIDIA_SMI"), Dmesg: os.Getenv("KVSWEEP_DMESG"), Node: *node, JobID: *job}
			return gpuhealth.Job(ctx, o, *out, *before, *fault, *log, e.stdout)
		}
	},
}
