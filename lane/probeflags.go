package lane

import "github.com/spf13/pflag"

// Flags sets o from kvsweep bisect's flags of what it searches, how it
// builds the probes' images and how it judges them.
func (o *ProbeOptions) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Component, "component", "kvcr", "the component whose commits are searched (a name in the pins file)")
	fs.StringVar(&o.Good, "good", "", "a commit the cells pass on (required)")
	fs.StringVar(&o.Bad, "bad", "", "a later commit they fail on (required)")
	fs.BoolVar(&o.All, "all", false, "search every commit between them, not only the first-parent line")
	fs.StringVar(&o.Cells, "cells", "", "KEY=VALUE[,KEY=VALUE]: run only the cells whose parameters match")
	fs.IntVar(&o.Parallel, "parallel", 1, "commits probed at once in each round (a k-ary search: fewer rounds)")
	fs.StringVar(&o.Out, "out", "", "the bisect's directory: its state, images' records and probe sweeps (required)")
	fs.StringVar(&o.Pins, "pins", "", "pins file (default: the spec's container.pins)")
	fs.StringVar(&o.Push, "push", "", "repository the probe images are pushed to, REGISTRY/NAME (required)")
	fs.StringVar(&o.Pull, "pull-registry", "", "HOST[:PORT] the jobs pull the probe images from, when not --push's registry (a mirror, or the nodes' own address for it)")
	fs.StringVar(&o.Addr, "buildkit-addr", "", "buildkitd address (default $BUILDKIT_HOST, else the rootful socket)")
	fs.StringVar(&o.MediaTypes, "media-types", "oci", "oci or docker manifests (enroot needs docker with some registries)")
	fs.BoolVar(&o.Insecure, "insecure-registry", false, "the registry speaks plain HTTP")
	fs.StringVar(&o.Metric, "metric", "", "judge by this metric's mean against the good end's, not by the verdicts")
	fs.StringVar(&o.Threshold, "threshold", "10%", "with --metric: the change for the worse that makes a commit bad")
	fs.BoolVar(&o.Gates.RequireProvenance, "require-provenance", false, "fail a cell that ran without the image's source-revisions.json")
}
