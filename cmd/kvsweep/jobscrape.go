package main

import (
	"bufio"
	"os"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/telemetry"
)

// jobScrapeCmd is in every build: jobs with telemetry run it.
var jobScrapeCmd = &command{
	name:    "scrape",
	args:    "--out FILE [--interval D] [--endpoints-file F] -- URL...",
	summary: "Scrape the engines' Prometheus endpoints into a cell's telemetry series until stopped",
	help: `Reads each URL (and each http(s) URL listed, one a line, in
--endpoints-file, read again every interval: a harness lists the endpoints
it starts there, "URL role=prefill name=prefill-0") every --interval, keeps
each series of the families docs/results.md catalogs with its rank labels,
and appends a JSON line a scrape to --out; a dead endpoint is a line with
its error. Runs until TERM or INT.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		out := fs.String("out", "", "the series file (required)")
		interval := fs.Duration("interval", 10*time.Second, "time between scrapes")
		listed := fs.String("endpoints-file", "", "a file of more endpoints, one a line")
		return func(e *env, args []string) error {
			if *out == "" || *interval < 100*time.Millisecond {
				return usagef("--out FILE is required, and --interval at least 100ms")
			}
			f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
			if err != nil {
				return err
			}
			defer f.Close()
			w := bufio.NewWriter(f)
			ctx, stop := interruptible()
			defer stop()
			listedNow := telemetry.Endpoints(args, *listed)
			eps := func() []telemetry.Endpoint { defer w.Flush(); return listedNow() }
			err = telemetry.Scrape(ctx, eps, *interval, w)
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			return err
		}
	},
}
