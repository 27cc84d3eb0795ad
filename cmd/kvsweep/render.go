package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sbatch"
	"github.com/kvsweep/kvsweep/sweep"
)

func init() { register(renderCmd) }

var renderCmd = &command{
	name:    "render",
	args:    "SPEC --out DIR",
	summary: "Write the sweep directory: frozen spec, manifest and job scripts",
	help: `Expands SPEC and writes the sweep directory DIR (layout in docs/sweep-dir.md):
spec.yaml, manifest.json, one job-array script per topology under jobs/
(split at --max-array-size), and each job's cell table and command lines
beside its script (jobs/NAME.cells, jobs/NAME.args).
Rendering into an existing sweep directory keeps its sweep id and every
cell's place, and adds new cells as new jobs.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := renderFlags(fs)
		return func(e *env, args []string) error {
			path, err := oneArg(args, "the spec file")
			if err != nil {
				return err
			}
			return o.render(e, path)
		}
	},
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
	fs.IntVar(&o.maxArray, "max-array-size", sweep.DefaultMaxArraySize, "split job arrays at this many tasks (submit re-splits to the cluster's MaxArraySize)")
	fs.BoolVar(&o.noArray, "no-array", false, "one job script per cell instead of job arrays")
	fs.StringVar(&o.sweepID, "sweep-id", "", "sweep id (default: kept from DIR, or NAME-RANDOM)")
	return o
}

// render renders the spec at specPath into o.out and says what it wrote.
func (o *renderOpts) render(e *env, specPath string) error {
	if o.out == "" {
		return usagef("--out DIR is required")
	}
	spec, cells, src, err := matrix.LoadCells(specPath)
	if err != nil {
		return err
	}
	m, err := sbatch.Render(spec, src, cells, o.out, sbatch.Options{
		SweepID: o.sweepID, TemplatesDir: o.templates, MaxArraySize: o.maxArray,
		NoArray: o.noArray, Version: version(),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "rendered sweep %s: %d cells in %d job scripts under %s\n", m.SweepID, len(m.Cells), len(m.Jobs), o.out)
	return nil
}
