//go:build !lite

package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/imagebuild"
)

// imageLayerCmd is kvsweep image layer: a pull request's KVCR over the
// current main image.
var imageLayerCmd = &command{
	name:    "layer",
	args:    "--on IMAGE --kvcr DIR (--push REF | --output oci:FILE|docker:FILE|squashfs:FILE)...",
	summary: "Install a KVCR checkout over an image kvsweep built, recording its commit",
	help: `Pins IMAGE by digest and reads its source-revisions.json, then builds
one layer over it through buildkitd: the KVCR checkout at --kvcr installed
as the quick-start Dockerfile installs KVCR, the image's user kept, and
/opt/kvcr-build/source-revisions.json replaced by the image's record with
KVCR's commit (and dirty state) replaced and IMAGE named under layered_on.
Dynamo, the adapter, vLLM and the Python inputs stay as built. For a pull
request's lanes on the current main image: docs/ci.md.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		o := outputFlags(fs)
		on := fs.String("on", "", "the image to layer on (a tag is pinned to the digest it names now)")
		kvcr := fs.String("kvcr", "", "the KVCR checkout to install")
		dockerfile := fs.String("dockerfile", "", "a Dockerfile of the site's instead of the embedded layer Dockerfile")
		fs.BoolVar(&o.insecure, "insecure-registry", false, "the registries speak plain HTTP")
		fs.BoolVar(&o.dirty, "allow-dirty", false, "accept a checkout with uncommitted changes (recorded with a hash of the diff)")
		return func(e *env, args []string) error {
			if len(args) != 0 {
				return usagef("image layer takes no arguments")
			}
			if *on == "" || *kvcr == "" {
				return usagef("--on IMAGE and --kvcr DIR are required")
			}
			if err := oneOf("media-types", o.mediaTypes, "oci", "docker"); err != nil {
				return err
			}
			if !o.dryRun && o.push == "" && len(o.outputs) == 0 {
				return usagef("say where the image goes: --push REF, or --output oci:FILE|docker:FILE|squashfs:FILE (or --dry-run)")
			}
			return layerImage(e, o, *on, *kvcr, *dockerfile)
		}
	},
}

// layerImage plans the layer and builds it (or prints the plan).
func layerImage(e *env, o *imageOpts, on, kvcr, dockerfile string) error {
	ctx, stop := interruptible()
	defer stop()
	opts := append(insecureOpt(o.insecure), imagebuild.WithVersion(version()))
	if o.dirty {
		opts = append(opts, imagebuild.WithAllowDirty())
	}
	p, err := imagebuild.PlanLayer(ctx, on, kvcr, dockerfile, opts...)
	if err != nil {
		return err
	}
	if o.dryRun {
		return printJSON(e.stdout, p)
	}
	res, err := imagebuild.BuildLayer(ctx, p, o.build(e)...)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "built %s\n", imagebuild.Describe(&res.Revisions))
	if res.Digest != "" {
		fmt.Fprintf(e.stdout, "digest %s\n", res.Digest)
	}
	return nil
}

// imageResolveCmd is kvsweep image resolve: "the current main image".
var imageResolveCmd = &command{
	name:    "resolve",
	args:    "REF",
	summary: "Print the image a tag names now, pinned by digest",
	help: `Asks REF's registry which image its tag names now, checks that image
records /opt/kvcr-build/source-revisions.json (kvsweep image build made
it), and prints it as NAME:TAG@sha256:DIGEST on stdout, the revisions it
records on stderr: a workflow then runs exactly that image, whatever the
tag does next. The image workflow moves the tag main to each verified
build of main, so "the current main image" is kvsweep image resolve
REPO:main (docs/ci.md).`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		insecure := fs.Bool("insecure-registry", false, "the registry speaks plain HTTP")
		format := fs.String("format", "text", "text (the pinned reference) or json (with the revisions)")
		return func(e *env, args []string) error {
			ref, err := oneArg(args, "the image")
			if err != nil {
				return err
			}
			if err := oneOf("format", *format, "text", "json"); err != nil {
				return err
			}
			return resolveImage(e, ref, *format, *insecure)
		}
	},
}

// resolveImage pins ref and reads what the pinned image records.
func resolveImage(e *env, ref, format string, insecure bool) error {
	ctx := context.Background()
	pinned, err := imagebuild.PinDigest(ctx, ref, insecureOpt(insecure)...)
	if err != nil {
		return err
	}
	in, err := imagebuild.Inspect(ctx, pinned, insecureOpt(insecure)...)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	if format == "json" {
		return printJSON(e.stdout, in)
	}
	fmt.Fprintln(e.stdout, pinned)
	fmt.Fprintf(e.stderr, "%s is %s: %s\n", ref, in.Digest, imagebuild.Describe(in.Revisions))
	return nil
}
