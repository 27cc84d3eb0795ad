package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/sbatch"
	"github.com/kvsweep/kvsweep/sweep"
)

func init() {
	register(&command{
		name:    "render",
		args:    "SPEC --out DIR",
		summary: "Write the sweep directory: frozen spec, manifest and job scripts",
		help: `Expands SPEC and writes the sweep directory DIR (layout in docs/sweep-dir.md):
spec.yaml, manifest.json, one job-array script per topology under jobs/
(split at --max-array-size), each cell's command line under cells/ID/.
Rendering into an existing sweep directory keeps its sweep id and every
cell's place, and adds new cells as new jobs.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			o := renderFlags(fs)
			return func(e *env, args []string) error {
				path, err := oneArg(args, "the spec file")
				if err != nil {
					return err
				}
				m, err := o.render(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "rendered sweep %s: %d cells in %d job scripts under %s\n", m.SweepID, len(m.Cells), len(m.Jobs), o.out)
				return nil
			}
		},
	})
}

// renderOpts are the flags shared by render and run.
type renderOpts struct {
	out, templates, sweepID string
	maxArray                int
	noArray                 bool
}

func renderFlags(fs *pflag.FlagSet) *renderOpts {
	o := &renderOpts{}
	fs.StringVar(&o.out, "out", "", "sweep directory to write (required)")
	fs.StringVar(&o.templates, "templates", "", "directory of *.tmpl files overriding the embedded job templates")
	fs.IntVar(&o.maxArray, "max-array-size", sbatch.DefaultMaxArraySize, "split job arrays at this many tasks (submit re-splits to the cluster's MaxArraySize)")
	fs.BoolVar(&o.noArray, "no-array", false, "one job script per cell instead of job arrays")
	fs.StringVar(&o.sweepID, "sweep-id", "", "sweep id (default: kept from DIR, or NAME-RANDOM)")
	return o
}

func (o *renderOpts) render(specPath string) (*sweep.Manifest, error) {
	if o.out == "" {
		return nil, usagef("--out DIR is required")
	}
	spec, cells, src, err := loadSpec(specPath)
	if err != nil {
		return nil, err
	}
	return sbatch.Render(spec, src, cells, o.out, sbatch.Options{
		SweepID: o.sweepID, TemplatesDir: o.templates, MaxArraySize: o.maxArray,
		NoArray: o.noArray, Version: version(),
	})
}
