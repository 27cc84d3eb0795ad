//go:build !lite

package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/imagebuild"
	"github.com/kvsweep/kvsweep/internal/fail"
)

// imageCommands are the subcommands of kvsweep image.
var imageCommands = []*command{
	{
		name:    "build",
		args:    "--pins FILE (--push REF | --output oci:FILE|docker:FILE|squashfs:FILE)...",
		summary: "Build the quick-start image with BuildKit from pinned revisions",
		help: `Resolves every pin to a full commit (refusing placeholders, unknown refs,
branches without --allow-moving, a base image without digest or whose tag
moved, a dirty KVCR checkout without --allow-dirty), then builds through
buildkitd: Dynamo and the vLLM adapter fetched by BuildKit at exactly their
commits, KVCR from its checkout, and /opt/kvcr-build/source-revisions.json
written from the same resolved pins. The pins' engine (vllm, the default,
or sglang) chooses the embedded Dockerfile: the vLLM image on vLLM's base
with the adapter, or the SGLang image on SGLang's base without one. The image gets OCI labels and
annotations; --metadata-file writes the record with the pushed digest.
Builds are reproducible: SOURCE_DATE_EPOCH is the newest pinned commit time.
--platform linux/amd64,linux/arm64 (default: the pins' platforms) builds
one index with an image per platform from the same pins, each recording
its platform; a download checked by one SHA-256 for all is a finding.
See docs/image.md.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			o := buildFlags(fs)
			return func(e *env, args []string) error {
				if len(args) != 0 {
					return usagef("image build takes no arguments")
				}
				if err := oneOf("media-types", o.mediaTypes, "oci", "docker"); err != nil {
					return err
				}
				if !o.dryRun && !o.check && o.push == "" && len(o.outputs) == 0 {
					return usagef("say where the image goes: --push REF, or --output oci:FILE|docker:FILE|squashfs:FILE (or --dry-run)")
				}
				r, err := o.resolve(e)
				if err != nil {
					return err
				}
				if o.dryRun {
					return imagebuild.MakePlan(r, version(), "(dry run)").WriteText(e.stdout)
				}
				if o.check {
					return checkImage(e, r, o)
				}
				ctx, stop := interruptible()
				defer stop()
				res, err := imagebuild.Build(ctx, r, o.build(e)...)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "built %s\n", imagebuild.Describe(&res.Revisions))
				if res.Digest != "" {
					fmt.Fprintf(e.stdout, "digest %s\n", res.Digest)
				}
				for _, p := range res.Platforms {
					fmt.Fprintf(e.stdout, "%s %s\n", p.Platform, p.Digest)
				}
				return nil
			}
		},
	},
	{
		name:    "inspect",
		args:    "REF|oci:FILE|docker:FILE",
		summary: "Show the revisions and labels an image records",
		help:    `Of an index, every platform's image (--format json: a list).`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			insecure := fs.Bool("insecure-registry", false, "the registry speaks plain HTTP")
			format := fs.String("format", "text", "text or json")
			return func(e *env, args []string) error {
				ref, err := oneArg(args, "the image")
				if err != nil {
					return err
				}
				if err := oneOf("format", *format, "text", "json"); err != nil {
					return err
				}
				ins, err := imagebuild.InspectAll(context.Background(), ref, insecureOpt(*insecure)...)
				if err != nil {
					return err
				}
				return imagebuild.WriteInspections(e.stdout, ins, *format == "json")
			}
		},
	},
	{
		name:    "verify",
		args:    "REF|oci:FILE|docker:FILE --pins FILE",
		summary: "Check an image records exactly what the pins resolve to",
		help:    `Exits 1 naming each component (and the base) whose recorded revision differs; of an index, every platform's image, and each platform the pins build.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			o := &imageOpts{}
			o.resolveFlags(fs)
			return func(e *env, args []string) error {
				ref, err := oneArg(args, "the image")
				if err != nil {
					return err
				}
				r, err := o.resolve(e)
				if err != nil {
					return err
				}
				ins, err := imagebuild.InspectAll(context.Background(), ref, insecureOpt(o.insecure)...)
				if err != nil {
					return err
				}
				return imagebuild.WriteVerify(e.stdout, ref, o.pins, ins, r)
			}
		},
	},
}

// checkImage runs kvsweep's checks and BuildKit's over the build r
// would run, printing each finding; findings are a failed check.
func checkImage(e *env, r *imagebuild.Resolved, o *imageOpts) error {
	ours, err := imagebuild.Check(r)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	theirs, err := imagebuild.Lint(ctx, r, o.build(e)...)
	if err != nil {
		return err
	}
	for _, f := range append(ours, theirs...) {
		fmt.Fprintln(e.stdout, f)
	}
	if n := len(ours) + len(theirs); n > 0 {
		return &fail.CheckError{Msg: fmt.Sprintf("image build --check: %d findings (%d kvsweep's, %d BuildKit's)", n, len(ours), len(theirs))}
	}
	fmt.Fprintln(e.stdout, "no findings: kvsweep's checks and BuildKit's pass")
	return nil
}

// imageOpts are the flags of image build and verify.
type imageOpts struct {
	pins, addr, progress, push, metadata     string
	platform                                 string
	outputs, cacheFrom, cacheTo              []string
	mediaTypes                               string
	insecure, dryRun, moving, dirty, offline bool
	check                                    bool
}

func buildFlags(fs *pflag.FlagSet) *imageOpts {
	o := outputFlags(fs)
	fs.BoolVar(&o.check, "check", false, "run the checks every build runs first (kvsweep's and BuildKit's), print the findings; build nothing")
	o.resolveFlags(fs)
	return o
}

// outputFlags are the flags of where an image goes and how it is built,
// shared by image build and image layer.
func outputFlags(fs *pflag.FlagSet) *imageOpts {
	o := &imageOpts{}
	fs.StringVar(&o.addr, "buildkit-addr", "", "buildkitd address: unix://, tcp://, docker-container://NAME (default $BUILDKIT_HOST, else "+imagebuild.DefaultAddr+")")
	fs.StringVar(&o.progress, "progress", "auto", "BuildKit progress: auto, tty, plain or quiet")
	fs.StringVar(&o.push, "push", "", "push the image to REF (auth from the Docker config)")
	fs.StringArrayVar(&o.outputs, "output", nil, "also write oci:FILE, docker:FILE or squashfs:FILE (repeatable)")
	fs.StringArrayVar(&o.cacheFrom, "cache-from", nil, "import cache: type=registry,ref=R or type=local,src=DIR (repeatable)")
	fs.StringArrayVar(&o.cacheTo, "cache-to", nil, "export cache: type=registry,ref=R[,mode=max] or type=local,dest=DIR")
	fs.StringVar(&o.metadata, "metadata-file", "", "write the source revisions and the pushed digest to FILE")
	fs.StringVar(&o.mediaTypes, "media-types", "oci", "manifest media types: oci, or docker for clients and registries that need Docker's (docs/image.md)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the resolved revisions and frontend attributes; build nothing")
	return o
}

func (o *imageOpts) resolveFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.pins, "pins", "", "pins file (required)")
	fs.BoolVar(&o.insecure, "insecure-registry", false, "the registries speak plain HTTP")
	fs.BoolVar(&o.moving, "allow-moving", false, "accept a branch, building and recording the commit it points to now")
	fs.BoolVar(&o.dirty, "allow-dirty", false, "accept a KVCR checkout with uncommitted changes (recorded with a hash of the diff)")
	fs.BoolVar(&o.offline, "offline", false, "do not check the base image digest against its registry")
	fs.StringVar(&o.platform, "platform", "", "platforms, comma-separated: linux/amd64, linux/arm64 (default: the pins' platforms)")
}

func insecureOpt(insecure bool) []imagebuild.Option {
	if insecure {
		return []imagebuild.Option{imagebuild.WithInsecureRegistry()}
	}
	return nil
}

// resolve loads and resolves the pins, printing what was allowed.
func (o *imageOpts) resolve(e *env) (*imagebuild.Resolved, error) {
	if o.pins == "" {
		return nil, usagef("--pins FILE is required")
	}
	p, err := imagebuild.LoadPins(o.pins)
	if err != nil {
		return nil, err
	}
	opts := insecureOpt(o.insecure)
	if ps, err := imagebuild.ParsePlatforms(o.platform); err != nil {
		return nil, usagef("--platform: %v", err)
	} else if ps != nil {
		opts = append(opts, imagebuild.WithPlatforms(ps))
	}
	for flag, opt := range map[*bool]imagebuild.Option{&o.moving: imagebuild.WithAllowMoving(), &o.dirty: imagebuild.WithAllowDirty(), &o.offline: imagebuild.WithOffline()} {
		if *flag {
			opts = append(opts, opt)
		}
	}
	r, err := imagebuild.Resolve(context.Background(), p, opts...)
	if err != nil {
		return nil, err
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stderr, "kvsweep image: warning: %s\n", w)
	}
	return r, nil
}

// build is the options of imagebuild.Build the flags ask for.
func (o *imageOpts) build(e *env) []imagebuild.Option {
	opts := append(insecureOpt(o.insecure), imagebuild.WithProgress(o.progress, e.stderr), imagebuild.WithVersion(version()))
	if o.addr != "" {
		opts = append(opts, imagebuild.WithAddr(o.addr))
	}
	if o.push != "" {
		opts = append(opts, imagebuild.WithPush(o.push))
	}
	if o.metadata != "" {
		opts = append(opts, imagebuild.WithMetadataFile(o.metadata))
	}
	if o.mediaTypes == "docker" {
		opts = append(opts, imagebuild.WithDockerMediaTypes())
	}
	for _, s := range o.outputs {
		opts = append(opts, imagebuild.WithOutput(s))
	}
	for _, s := range o.cacheFrom {
		opts = append(opts, imagebuild.WithCacheFrom(s))
	}
	for _, s := range o.cacheTo {
		opts = append(opts, imagebuild.WithCacheTo(s))
	}
	return opts
}

func init() { register(imageCmd) }

var imageCmd = &command{
	name:    "image",
	args:    "build|layer|resolve|inspect|verify|prune [flags]",
	summary: "Build, layer, resolve, inspect, verify and prune the quick-start image",
	help: `  kvsweep image build --pins pins.yaml --push REG/kvcr:TAG
  kvsweep image resolve REG/kvcr:main
  kvsweep image layer --on REG/kvcr:main --kvcr ../kvcr --push REG/kvcr:pr-123
  kvsweep image inspect REG/kvcr:TAG
  kvsweep image verify REG/kvcr:TAG --pins pins.yaml
  kvsweep image prune --staging /shared/kvsweep-images --unused-for 336h

Run 'kvsweep help image SUBCOMMAND' for each one's flags.`,
	subs: append(imageCommands, imageLayerCmd, imageResolveCmd, imagePruneCmd),
}
