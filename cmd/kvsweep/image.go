package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/imagebuild"
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
written from the same resolved pins. The image gets OCI labels and
annotations; --metadata-file writes the record with the pushed digest.
Builds are reproducible: SOURCE_DATE_EPOCH is the newest pinned commit time.
See docs/image.md.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			pins := fs.String("pins", "", "pins file (required)")
			addr := fs.String("buildkit-addr", "", "buildkitd address: unix://, tcp://, docker-container://NAME (default $BUILDKIT_HOST, else "+imagebuild.DefaultAddr+")")
			progress := fs.String("progress", "auto", "BuildKit progress: auto, tty, plain or quiet")
			push := fs.String("push", "", "push the image to REF (auth from the Docker config)")
			outputs := fs.StringArray("output", nil, "also write oci:FILE, docker:FILE or squashfs:FILE (repeatable)")
			insecure := fs.Bool("insecure-registry", false, "the registries speak plain HTTP")
			cacheFrom := fs.StringArray("cache-from", nil, "import cache: type=registry,ref=R or type=local,src=DIR (repeatable)")
			cacheTo := fs.StringArray("cache-to", nil, "export cache: type=registry,ref=R[,mode=max] or type=local,dest=DIR")
			meta := fs.String("metadata-file", "", "write the source revisions and the pushed digest to FILE")
			dry := fs.Bool("dry-run", false, "print the resolved pins and frontend attributes; build nothing")
			ro := resolveFlags(fs)
			return func(e *env, args []string) error {
				if len(args) != 0 {
					return usagef("image build takes no arguments")
				}
				r, err := ro.resolve(e, *pins, *insecure)
				if err != nil {
					return err
				}
				if *dry {
					plan := imagebuild.MakePlan(r, version(), "(dry run)")
					b, _ := json.MarshalIndent(plan.Revisions, "", "  ")
					fmt.Fprintf(e.stdout, "source-revisions.json:\n%s\n\ndockerfile: %s\ncontext: %s\nfrontend attributes:\n", b, plan.Dockerfile, plan.Context)
					for _, a := range imagebuild.SortedAttrs(plan.FrontendAttrs) {
						fmt.Fprintf(e.stdout, "  %s\n", a)
					}
					return nil
				}
				opts := []imagebuild.Option{imagebuild.WithProgress(*progress, e.stderr), imagebuild.WithVersion(version())}
				if *addr != "" {
					opts = append(opts, imagebuild.WithAddr(*addr))
				}
				if *push != "" {
					opts = append(opts, imagebuild.WithPush(*push))
				}
				for _, o := range *outputs {
					opts = append(opts, imagebuild.WithOutput(o))
				}
				if *insecure {
					opts = append(opts, imagebuild.WithInsecureRegistry())
				}
				for _, c := range *cacheFrom {
					opts = append(opts, imagebuild.WithCacheFrom(c))
				}
				for _, c := range *cacheTo {
					opts = append(opts, imagebuild.WithCacheTo(c))
				}
				if *meta != "" {
					opts = append(opts, imagebuild.WithMetadataFile(*meta))
				}
				ctx, stop := interruptible()
				defer stop()
				res, err := imagebuild.Build(ctx, r, opts...)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "built %s\n", describeRevisions(res.Revisions))
				if res.Digest != "" {
					fmt.Fprintf(e.stdout, "digest %s\n", res.Digest)
				}
				return nil
			}
		},
	},
	{
		name:    "inspect",
		args:    "REF|oci:FILE|docker:FILE",
		summary: "Show the revisions and labels an image records",
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
				in, err := imagebuild.Inspect(context.Background(), ref, *insecure)
				if err != nil {
					return err
				}
				if *format == "json" {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(in)
				}
				writeInspection(e.stdout, in)
				return nil
			}
		},
	},
	{
		name:    "verify",
		args:    "REF|oci:FILE|docker:FILE --pins FILE",
		summary: "Check an image records exactly what the pins resolve to",
		help:    `Exits 1 naming each component (and the base) whose recorded revision differs.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			pins := fs.String("pins", "", "pins file (required)")
			insecure := fs.Bool("insecure-registry", false, "the registry speaks plain HTTP")
			ro := resolveFlags(fs)
			return func(e *env, args []string) error {
				ref, err := oneArg(args, "the image")
				if err != nil {
					return err
				}
				r, err := ro.resolve(e, *pins, *insecure)
				if err != nil {
					return err
				}
				in, err := imagebuild.Inspect(context.Background(), ref, *insecure)
				if err != nil {
					return err
				}
				ms := imagebuild.Verify(in, r)
				if len(ms) == 0 {
					fmt.Fprintf(e.stdout, "%s matches %s: %s\n", ref, *pins, describeRevisions(*in.Revisions))
					return nil
				}
				var lines []string
				for _, m := range ms {
					lines = append(lines, "  "+m.String())
				}
				return fmt.Errorf("%s does not match %s:\n%s", ref, *pins, strings.Join(lines, "\n"))
			}
		},
	},
}

type resolveOpts struct{ allowMoving, allowDirty, offline *bool }

func resolveFlags(fs *pflag.FlagSet) *resolveOpts {
	return &resolveOpts{
		allowMoving: fs.Bool("allow-moving", false, "accept a branch, building and recording the commit it points to now"),
		allowDirty:  fs.Bool("allow-dirty", false, "accept a KVCR checkout with uncommitted changes (recorded with a hash of the diff)"),
		offline:     fs.Bool("offline", false, "do not check the base image digest against its registry"),
	}
}

func (o *resolveOpts) resolve(e *env, pinsPath string, insecure bool) (*imagebuild.Resolved, error) {
	if pinsPath == "" {
		return nil, usagef("--pins FILE is required")
	}
	p, err := imagebuild.LoadPins(pinsPath)
	if err != nil {
		return nil, err
	}
	r, err := imagebuild.Resolve(context.Background(), p, imagebuild.ResolveOptions{
		AllowMoving: *o.allowMoving, AllowDirty: *o.allowDirty, Offline: *o.offline, Insecure: insecure})
	if err != nil {
		return nil, err
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stderr, "kvsweep image: warning: %s\n", w)
	}
	return r, nil
}

func describeRevisions(rv imagebuild.SourceRevisions) string {
	var parts []string
	for _, n := range []string{imagebuild.Dynamo, imagebuild.VLLMAdapter, imagebuild.KVCR} {
		c := rv.Components[n]
		s := n + "@" + c.Commit
		if c.Dirty {
			s += "+dirty"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ") + " on " + rv.Base.Name + "@" + rv.Base.Digest
}

func writeInspection(w io.Writer, in *imagebuild.Inspection) {
	fmt.Fprintf(w, "image:   %s\ndigest:  %s\n", in.Ref, in.Digest)
	if rv := in.Revisions; rv != nil {
		fmt.Fprintf(w, "base:    %s@%s\ncreated: %s\nbuilder: kvsweep %s, BuildKit %s\n", rv.Base.Name, rv.Base.Digest, rv.Created, rv.Builder.Kvsweep, rv.Builder.BuildKit)
		for _, n := range []string{imagebuild.Dynamo, imagebuild.VLLMAdapter, imagebuild.KVCR} {
			c := rv.Components[n]
			dirty := ""
			if c.Dirty {
				dirty = " dirty, diff sha256 " + c.DiffSHA256
			}
			fmt.Fprintf(w, "%-13s %s  %s %s%s\n", n+":", c.Commit, c.Repo, c.Ref, dirty)
		}
	}
	fmt.Fprintln(w, "labels:")
	for _, kv := range imagebuild.SortedAttrs(in.Labels) {
		fmt.Fprintf(w, "  %s\n", kv)
	}
}

func init() {
	register(&command{
		name:    "image",
		args:    "build|inspect|verify [flags]",
		summary: "Build, inspect and verify the quick-start image",
		help: `  kvsweep image build --pins pins.yaml --push REG/kvcr:TAG
  kvsweep image inspect REG/kvcr:TAG
  kvsweep image verify REG/kvcr:TAG --pins pins.yaml

Run 'kvsweep image SUBCOMMAND --help' for each one's flags.`,
		setup: group("image", imageCommands),
	})
}
