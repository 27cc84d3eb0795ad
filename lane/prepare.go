package lane

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/sweep"
)

// Prepared is a spec rendered into its sweep directory.
type Prepared struct {
	Dir      string
	Manifest *sweep.Manifest
}

// Prepare renders the spec at specPath into the lane's Render.Out: its
// images pinned by digest (unless offline), the commits they must record
// (container.pins and --expect), the revision sets' images built, and
// says what it wrote.
func (l *Lane) Prepare(ctx context.Context, specPath string) (*Prepared, error) {
	o := &l.Render
	if o.Out == "" {
		return nil, fail.Usagef("--out DIR is required")
	}
	spec, cells, src, err := matrix.LoadCells(specPath)
	if err != nil {
		return nil, err
	}
	for _, w := range spec.Warnings {
		fmt.Fprintf(l.Stderr, "kvsweep: warning: %s\n", w.Error())
	}
	if o.Cells != nil {
		if cells, err = o.Cells(spec, cells); err != nil {
			return nil, err
		}
	}
	opts := render.Options{SweepID: o.SweepID, TemplatesDir: o.Templates, MaxArraySize: o.MaxArraySize,
		NoArray: o.NoArray, Version: l.Tools.Version, NoBinary: l.Tools.NoBinary, Objects: l.Tools.Objects}
	if err := o.expectFlags(spec); err != nil {
		return nil, err
	}
	if err := l.choosePlatform(ctx, spec); err != nil {
		return nil, err
	}
	var keep func(bool) error
	if o.Revisions != "" {
		if spec, cells, keep, err = l.withRevisions(ctx, spec, specPath, src, &opts); err != nil {
			return nil, err
		}
	} else if opts.Image, opts.Expect, err = l.provenance(ctx, spec, specPath); err != nil {
		return nil, err
	}
	if opts.EngineImages, err = l.engineImages(ctx, spec); err != nil {
		return nil, err
	}
	m, err := render.Render(spec, src, cells, o.Out, opts)
	if keep != nil {
		if kerr := keep(err == nil); err == nil {
			err = kerr
		}
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(l.Stdout, "rendered sweep %s: %d cells in %d job scripts under %s\n", m.SweepID, len(m.Cells), len(m.Jobs), o.Out)
	return &Prepared{Dir: o.Out, Manifest: m}, nil
}

// expectFlags puts the --expect commits into the spec's container.expect,
// over what it says (and so over container.pins).
func (o *RenderOptions) expectFlags(spec *matrix.Spec) error {
	if len(o.Expect) == 0 {
		return nil
	}
	if o.Revisions != "" {
		return fail.Usagef("--expect with --revisions: each revision set's image records its own commits")
	}
	for _, kv := range o.Expect {
		comp, commit, ok := strings.Cut(kv, "=")
		if !ok || !componentName.MatchString(comp) || !fullCommit.MatchString(commit) {
			return fail.Usagef("--expect %q: expected COMPONENT=COMMIT, a component name (dynamo, vllm_adapter, kvcr) and a full commit (40 or 64 hexadecimal digits)", kv)
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
// expands the spec once per set; keep moves the sets' records into the
// sweep once it is rendered.
func (l *Lane) withRevisions(ctx context.Context, spec *matrix.Spec, specPath string, src []byte, opts *render.Options) (*matrix.Spec, []matrix.Cell, func(bool) error, error) {
	revs, names, keep, err := l.buildRevisions(ctx, spec, specPath)
	if err != nil {
		return nil, nil, nil, err
	}
	opts.Revisions, opts.Image = revs, revs[names[0]].Image
	s, cells, err := revisionAxis(specPath, src, names)
	return s, cells, keep, err
}

// engineImages pins the images engines have of their own, as provenance
// pins the container's.
func (l *Lane) engineImages(ctx context.Context, spec *matrix.Spec) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range spec.EngineOrder {
		en := spec.Engines[name]
		if en.Image == "" || !spec.RunsImage() {
			continue
		}
		img, err := l.pin(ctx, en.Image, spec.Cluster.Platform)
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
func (l *Lane) provenance(ctx context.Context, spec *matrix.Spec, specPath string) (string, map[string]string, error) {
	o := &l.Render
	image := spec.Container.Image
	if o.Image != "" {
		if strings.HasPrefix(o.Image, "-") || strings.ContainsAny(o.Image, " \t\r\n\"'\\") {
			return "", nil, fail.Usagef("--image %q is not an image reference (expected REGISTRY/NAME[:TAG][@sha256:...])", o.Image)
		}
		image = o.Image
	}
	var err error
	if spec.RunsImage() && image != "" {
		if image, err = l.pin(ctx, image, spec.Cluster.Platform); err != nil {
			return "", nil, err
		}
	}
	if spec.Container.Pins == "" {
		return image, nil, nil
	}
	pins := specRelative(specPath, spec.Container.Pins)
	im, err := l.images("container.pins needs the pins reader")
	if err != nil {
		return "", nil, err
	}
	if o.Offline {
		// No resolution without the network: the commits the pins name
		// exactly are checked in the job; the rest are said.
		expect, unresolved, err := im.PinnedCommits(pins)
		if err == nil && len(unresolved) > 0 {
			fmt.Fprintf(l.Stderr, "kvsweep: warning: --offline: container.pins %s: %s not resolved to a commit; the jobs check only the commits it pins exactly\n", pins, strings.Join(unresolved, ", "))
		}
		return image, expect, err
	}
	expect, err := im.ExpectedCommits(ctx, pins)
	return image, expect, err
}

// specRelative is a path the spec names, relative to the spec's directory.
func specRelative(specPath, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(specPath), path)
}

// pin resolves an image's tag to the digest its registry serves, and an
// index to the image of the cluster's platform, unless --offline (which
// warns about a tag-only reference, and an unchecked platform).
func (l *Lane) pin(ctx context.Context, image, platform string) (string, error) {
	if l.Render.Offline {
		if !strings.Contains(image, "@sha256:") {
			fmt.Fprintf(l.Stderr, "kvsweep: warning: %s is not pinned by digest (--offline): cells may run different images, and rows carry no digest\n", image)
		}
		if platform != "" {
			fmt.Fprintf(l.Stderr, "kvsweep: warning: %s is not pinned to its %s image (--offline): the jobs check the node's platform only\n", image, platform)
		}
		return image, nil
	}
	im, err := l.images("pinning the image's tag to a digest needs the registry client (--offline keeps the tag)")
	if err != nil {
		return "", err
	}
	return im.PinDigest(ctx, image, platform, l.Render.Insecure)
}

// revisionAxis expands the spec again with a revision axis of the sets'
// names: every cell once per revision set.
func revisionAxis(specPath string, src []byte, names []string) (*matrix.Spec, []matrix.Cell, error) {
	spec, err := matrix.Parse(specPath, src)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range spec.Matrix.Axes {
		if a.Name == render.RevisionParam {
			return nil, nil, fail.Usagef("%s:%d:%d: matrix: the axis %q is --revisions' own", specPath, a.Pos.Line, a.Pos.Col, a.Name)
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
