package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
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
			return o.render(e, path)
		}
	},
}

// renderOpts are the flags shared by render and run.
type renderOpts struct {
	out, templates, sweepID string
	image, revisions        string
	expect                  []string
	maxArray                int
	noArray, offline        bool
	insecure                bool
	// keep, when set, runs once the sweep is rendered (or failed to
	// be): the revision sets' records move into it.
	keep func(rendered bool) error
}

func renderFlags(fs *pflag.FlagSet) *renderOpts {
	o := &renderOpts{}
	fs.StringVar(&o.out, "out", "", "sweep directory to write (required)")
	fs.StringVar(&o.templates, "templates", "", "directory of *.tmpl files overriding the embedded job templates")
	fs.IntVar(&o.maxArray, "max-array-size", sweep.DefaultMaxArraySize, "split job arrays at this many tasks (submit re-splits to the cluster's MaxArraySize)")
	fs.BoolVar(&o.noArray, "no-array", false, "one job script per cell instead of job arrays")
	fs.StringVar(&o.sweepID, "sweep-id", "", "sweep id (default: kept from DIR, or NAME-RANDOM)")
	fs.BoolVar(&o.offline, "offline", false, "keep a tag-only container.image as it is (by default it is resolved to the digest its registry serves)")
	fs.BoolVar(&o.insecure, "insecure-registry", false, "the image's registry speaks plain HTTP")
	fs.StringVar(&o.image, "image", "", "run this image instead of the spec's container.image (a CI job's freshly built one)")
	fs.StringArrayVar(&o.expect, "expect", nil, "COMPONENT=COMMIT: the image must record this commit (a pull request's, on a layered image), over container.pins and container.expect (repeatable)")
	fs.StringVar(&o.revisions, "revisions", "", "revisions file: run every cell once per revision set (a PR stack, a commit range), each in an image built from the pins at those revisions")
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
	opts := render.Options{SweepID: o.sweepID, TemplatesDir: o.templates, MaxArraySize: o.maxArray,
		NoArray: o.noArray, Version: version(), NoBinary: noBinary, Objects: renderObjects}
	if err := o.expectFlags(spec); err != nil {
		return err
	}
	if o.revisions != "" {
		if spec, cells, err = o.withRevisions(e, spec, specPath, src, &opts); err != nil {
			return err
		}
	} else if opts.Image, opts.Expect, err = o.provenance(e, spec, specPath); err != nil {
		return err
	}
	if opts.EngineImages, err = o.engineImages(e, spec); err != nil {
		return err
	}
	m, err := render.Render(spec, src, cells, o.out, opts)
	if o.keep != nil {
		if kerr := o.keep(err == nil); err == nil {
			err = kerr
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "rendered sweep %s: %d cells in %d job scripts under %s\n", m.SweepID, len(m.Cells), len(m.Jobs), o.out)
	return nil
}

// expectFlags puts the --expect commits into the spec's container.expect,
// over what it says (and so over container.pins).
func (o *renderOpts) expectFlags(spec *matrix.Spec) error {
	if len(o.expect) == 0 {
		return nil
	}
	if o.revisions != "" {
		return usagef("--expect with --revisions: each revision set's image records its own commits")
	}
	for _, kv := range o.expect {
		comp, commit, ok := strings.Cut(kv, "=")
		if !ok || !componentName.MatchString(comp) || !fullCommit.MatchString(commit) {
			return usagef("--expect %q: expected COMPONENT=COMMIT, a component name (dynamo, vllm_adapter, kvcr) and a full commit (40 or 64 hexadecimal digits)", kv)
		}
		if spec.Container.Expect == nil {
			spec.Container.Expect = map[string]string{}
		}
		spec.Container.Expect[comp] = commit
	}
	spec.Container.ExpectKeys = slices.Sorted(maps.Keys(spec.Container.Expect))
	return nil
}

var (
	componentName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	fullCommit    = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
)

// withRevisions builds the images of the --revisions file's sets and
// expands the spec once per set.
func (o *renderOpts) withRevisions(e *env, spec *matrix.Spec, specPath string, src []byte, opts *render.Options) (*matrix.Spec, []matrix.Cell, error) {
	revs, names, keep, err := buildRevisions(e, spec, specPath, o.out, o.revisions, o.insecure)
	if err != nil {
		return nil, nil, err
	}
	o.keep = keep
	opts.Revisions, opts.Image = revs, revs[names[0]].Image
	return withRevisions(specPath, src, names)
}

// engineImages pins the images engines have of their own, as provenance
// pins the container's.
func (o *renderOpts) engineImages(e *env, spec *matrix.Spec) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range spec.EngineOrder {
		en := spec.Engines[name]
		if en.Image == "" || !spec.RunsImage() {
			continue
		}
		img, err := o.pin(e, en.Image)
		if err != nil {
			return nil, fmt.Errorf("engines.%s.image: %w", name, err)
		}
		out[name] = img
	}
	return out, nil
}

// provenance pins the spec's image by digest (unless --offline, which
// says so) and resolves container.pins to the commits the image must
// record.
func (o *renderOpts) provenance(e *env, spec *matrix.Spec, specPath string) (string, map[string]string, error) {
	image := spec.Container.Image
	if o.image != "" {
		if strings.HasPrefix(o.image, "-") || strings.ContainsAny(o.image, " \t\r\n\"'\\") {
			return "", nil, usagef("--image %q is not an image reference (expected REGISTRY/NAME[:TAG][@sha256:...])", o.image)
		}
		image = o.image
	}
	var err error
	if spec.RunsImage() && image != "" {
		if image, err = o.pin(e, image); err != nil {
			return "", nil, err
		}
	}
	if spec.Container.Pins == "" {
		return image, nil, nil
	}
	pins := spec.Container.Pins
	if !filepath.IsAbs(pins) {
		pins = filepath.Join(filepath.Dir(specPath), pins)
	}
	if o.offline {
		// No resolution without the network: the commits the pins name
		// exactly are checked in the job; the rest are said.
		expect, unresolved, err := pinnedCommits(pins)
		if err == nil && len(unresolved) > 0 {
			fmt.Fprintf(e.stderr, "kvsweep: warning: --offline: container.pins %s: %s not resolved to a commit; the jobs check only the commits it pins exactly\n", pins, strings.Join(unresolved, ", "))
		}
		return image, expect, err
	}
	expect, err := expectedCommits(context.Background(), pins)
	return image, expect, err
}

// pin resolves an image's tag to the digest its registry serves, unless
// --offline (which warns about a tag-only reference).
func (o *renderOpts) pin(e *env, image string) (string, error) {
	if o.offline {
		if !strings.Contains(image, "@sha256:") {
			fmt.Fprintf(e.stderr, "kvsweep: warning: %s is not pinned by digest (--offline): cells may run different images, and rows carry no digest\n", image)
		}
		return image, nil
	}
	return pinDigest(context.Background(), image, o.insecure)
}

// withRevisions expands the spec again with a revision axis of the sets'
// names: every cell once per revision set.
func withRevisions(specPath string, src []byte, names []string) (*matrix.Spec, []matrix.Cell, error) {
	spec, err := matrix.Parse(specPath, src)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range spec.Matrix.Axes {
		if a.Name == render.RevisionParam {
			return nil, nil, usagef("%s:%d:%d: matrix: the axis %q is --revisions' own", specPath, a.Pos.Line, a.Pos.Col, a.Name)
		}
	}
	axis := matrix.Axis{Name: render.RevisionParam, Pos: spec.Matrix.Pos}
	for _, n := range names {
		axis.Values = append(axis.Values, matrix.Value{S: n, Pos: spec.Matrix.Pos})
	}
	spec.Matrix.Axes = append(spec.Matrix.Axes, axis)
	cells, err := matrix.Expand(spec)
	return spec, cells, err
}
