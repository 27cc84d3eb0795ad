//go:build !lite

package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/staging"
)

var imagePruneCmd = &command{
	name:    "prune",
	args:    "--staging DIR [--unused-for DURATION] [--dry-run]",
	summary: "Remove staged images no job used lately",
	help: `Removes from a staging directory (container.staging) the images no job
used for --unused-for, and the files of imports that were killed. An image
a running job holds, and an import under way, are kept whatever their age;
nothing but the jobs' own files is touched. See docs/runtimes.md.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		dir := fs.String("staging", "", "the staging directory (required)")
		unused := fs.Duration("unused-for", 7*24*time.Hour, "remove images no job used for this long")
		dry := fs.Bool("dry-run", false, "say what would be removed; remove nothing")
		return func(e *env, args []string) error {
			if len(args) != 0 {
				return usagef("image prune takes no arguments")
			}
			if *dir == "" {
				return usagef("--staging DIR is required")
			}
			es, err := staging.Prune(*dir, staging.Options{UnusedFor: *unused, Now: time.Now(), DryRun: *dry})
			if werr := staging.WriteText(e.stdout, es, *dry); err == nil {
				err = werr
			}
			return err
		}
	},
}
