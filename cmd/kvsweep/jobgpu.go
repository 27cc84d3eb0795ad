package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/gpustat"
)

// jobGPUCmd is in every build: jobs with GPU telemetry run it.
var jobGPUCmd = &command{name: "gpu-sample", args: "--out FILE [--interval D]", help: gpustat.Help,
	summary: "Sample the GPUs with nvidia-smi into a cell's GPU series until stopped",
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		out, iv := fs.String("out", "", "the samples file (required)"), fs.Duration("interval", 2*time.Second, "time between samples")
		return func(*env, []string) error {
			if *out == "" || *iv < 100*time.Millisecond {
				return usagef("--out FILE is required, and --interval at least 100ms")
			}
			ctx, stop := interruptible()
			defer stop()
			return gpustat.SampleFile(ctx, *out, *iv)
		}
	},
}
