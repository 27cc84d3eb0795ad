//go:build lite

package main

import (
	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/lane"
)

// A kvsweep built with -tags lite compiles in a third of the time (the README's
// demo uses it): it plans, renders, submits, follows, collects and reports, but has
// no image builder, no registry client and no etcd. The commands and options that
// need them say so (lane.ErrLite): the tools of lane.go are left as they are.

func init() {
	for _, name := range []string{"bisect", "image"} {
		register(&command{name: name, args: "...", summary: "(not in a -tags lite build)",
			setup: func(fs *pflag.FlagSet) func(*env, []string) error {
				fs.SetInterspersed(false)
				return func(*env, []string) error { return lane.ErrLite }
			}})
	}
	// The job helpers without etcd: telemetry's scraper and GPU sampler, the case marker.
	register(&command{name: "job", args: "scrape|gpu-sample|health|case [flags]", summary: "Helpers a running job uses (etcd's are not in a -tags lite build)",
		subs: []*command{jobScrapeCmd, jobGPUCmd, jobHealthCmd, jobCaseCmd}})
}
