package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/gpuhealth"
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

// jobHealthCmd is in every build: each job runs it before and after its harness.
var jobHealthCmd = &command{name: "health", args: gpuhealth.Args, help: gpuhealth.Help, summary: gpuhealth.Summary,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		run := gpuhealth.Flags(fs)
		return func(e *env, _ []string) error { ctx, stop := interruptible(); defer stop(); return run(ctx, e.stdout) }
	}}
