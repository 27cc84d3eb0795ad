package main

import (
	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/lane"
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
cell's place, and adds new cells as new jobs.
With scheduler: k8s in the spec, each job's script is jobs/NAME.sh and the
Kubernetes Job its pods run is jobs/NAME.job.yaml (docs/kubernetes.md); DIR
must be on the volume the pods mount (kubernetes.volume.path).`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := renderFlags(fs)
		return func(e *env, args []string) error {
			path, err := oneArg(args, "the spec file")
			if err != nil {
				return err
			}
			_, err = prepare(e, o, path)
			return err
		}
	},
}

// renderFlags are the flags shared by render, run and ci.
func renderFlags(fs *pflag.FlagSet) *lane.RenderOptions {
	o := &lane.RenderOptions{}
	fs.StringVar(&o.Out, "out", "", "sweep directory to write (required)")
	fs.StringVar(&o.Templates, "templates", "", "directory of *.tmpl files overriding the embedded job templates")
	fs.IntVar(&o.MaxArraySize, "max-array-size", sweep.DefaultMaxArraySize, "split job arrays at this many tasks (submit re-splits to the cluster's MaxArraySize)")
	fs.BoolVar(&o.NoArray, "no-array", false, "one job script per cell instead of job arrays")
	fs.StringVar(&o.SweepID, "sweep-id", "", "sweep id (default: kept from DIR, or NAME-RANDOM)")
	fs.BoolVar(&o.Offline, "offline", false, "keep a tag-only container.image as it is (by default it is resolved to the digest its registry serves)")
	fs.BoolVar(&o.Insecure, "insecure-registry", false, "the image's registry speaks plain HTTP")
	fs.StringVar(&o.Image, "image", "", "run this image instead of the spec's container.image (a CI job's freshly built one)")
	fs.StringArrayVar(&o.Expect, "expect", nil, "COMPONENT=COMMIT: the image must record this commit (a pull request's, on a layered image), over container.pins and container.expect (repeatable)")
	fs.StringVar(&o.Revisions, "revisions", "", "revisions file: run every cell once per revision set (a PR stack, a commit range), each in an image built from the pins at those revisions")
	return o
}

// prepare renders the spec at specPath as o says (lane.Prepare), and says
// what it wrote.
func prepare(e *env, o *lane.RenderOptions, specPath string) (*lane.Prepared, error) {
	l := newLane(e)
	l.Render = *o
	ctx, stop := interruptible()
	defer stop()
	return l.Prepare(ctx, specPath)
}
