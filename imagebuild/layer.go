package imagebuild

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/buildkit/client"

	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/templates"
)

// LayerPlan is a KVCR checkout to install over an image kvsweep image
// build made: a pull request's KVCR run on the current main image, every
// other component as that image recorded it.
type LayerPlan struct {
	// On is the image layered on, pinned: NAME[:TAG]@sha256:DIGEST.
	On string `json:"on"`
	// User is the image's user, restored after the layer ("0" for root).
	User string `json:"user"`
	// Revisions is what the layered image records (of an index: the
	// first platform's image; Platforms is each platform's).
	Revisions     provenance.SourceRevisions            `json:"source_revisions"`
	Platforms     map[string]provenance.SourceRevisions `json:"platforms,omitempty"`
	FrontendAttrs map[string]string                     `json:"frontend_attrs"`
	Dockerfile    string                                `json:"dockerfile"`
	kvcrPath      string
}

// PlanLayer pins on by digest, reads what it records (refusing an image
// without source-revisions.json), resolves the KVCR checkout at kvcrPath
// (refusing uncommitted changes unless WithAllowDirty) and computes the
// record of the layered image: on's, with KVCR's commit replaced and on
// named under layered_on. dockerfile replaces the embedded layer
// Dockerfile when not "". WithInsecureRegistry, WithAllowDirty and
// WithVersion apply.
func PlanLayer(ctx context.Context, on, kvcrPath, dockerfile string, opts ...Option) (*LayerPlan, error) {
	o, err := apply(opts)
	if err != nil {
		return nil, err
	}
	pinned, err := PinDigest(ctx, on, opts...)
	if err != nil {
		return nil, err
	}
	ins, err := InspectAll(ctx, pinned, opts...)
	if err != nil {
		return nil, fmt.Errorf("the image to layer on: %w", err)
	}
	kv, err := resolveCheckout(ctx, kvcrPath)
	if err != nil {
		return nil, err
	}
	if kv.Dirty && !o.allowDirty {
		return nil, fmt.Errorf("the checkout %s has uncommitted changes (diff sha256 %s); commit them, or pass --allow-dirty to build and record them", kvcrPath, kv.DiffSHA256[:12])
	}
	name, _, _ := strings.Cut(pinned, "@")
	// Reproducible: the newest of the images' times and the commit's.
	epoch := kv.CommitTime
	for _, in := range ins {
		if t, err := time.Parse(time.RFC3339, in.Revisions.Created); err == nil {
			epoch = max(epoch, t.Unix())
		}
	}
	in := ins[0]
	rv := layerRecord(in, kv, name, o.version, epoch)
	user := in.User
	if user == "" {
		user = "0"
	}
	layeredOn := name + "@" + in.Digest
	if in.Index != "" {
		layeredOn = name + "@" + in.Index
	}
	attrs := map[string]string{
		"build-arg:ON_IMAGE":            pinned,
		"build-arg:RUNTIME_USER":        user,
		"build-arg:SOURCE_DATE_EPOCH":   strconv.FormatInt(epoch, 10),
		"context:provenance":            "local:provenance",
		"label:dev.kvsweep.kvcr.commit": kv.Commit,
		"label:dev.kvsweep.layered-on":  layeredOn,
	}
	var plats map[string]provenance.SourceRevisions
	if in.Index != "" {
		// An index: a layered image per platform, each on that platform's
		// image and recording it (the Platforms of a build).
		plats = map[string]provenance.SourceRevisions{}
		delete(attrs, "context:provenance")
		var names []string
		for _, pin := range ins {
			plats[pin.Platform] = layerRecord(pin, kv, name, o.version, epoch)
			attrs["context:provenance::"+pin.Platform] = "local:" + ProvenanceContext(pin.Platform)
			names = append(names, pin.Platform)
		}
		attrs["platform"] = strings.Join(names, ",")
	}
	if kv.Dirty {
		attrs["label:dev.kvsweep.kvcr.diff-sha256"] = kv.DiffSHA256
	}
	for k, v := range ociLabels(rv) {
		attrs["label:"+k] = v
	}
	df := dockerfile
	if df == "" {
		df = "(embedded) Dockerfile.kvcr-layer"
	}
	return &LayerPlan{On: pinned, User: user, Revisions: rv, Platforms: plats, FrontendAttrs: attrs, Dockerfile: df, kvcrPath: kvcrPath}, nil
}

// layerRecord is what an image layered on in records: in's record, with
// KVCR's commit replaced, in named under layered_on, and the time epoch.
func layerRecord(in *Inspection, kv Revision, name, version string, epoch int64) provenance.SourceRevisions {
	rv := *in.Revisions
	rv.Components = maps.Clone(rv.Components)
	if kv.Repo == "" {
		kv.Repo = rv.Components[KVCR].Repo
	}
	rv.Components[KVCR] = kv.Component
	rv.LayeredOn = &provenance.Layer{Name: name, Digest: in.Digest, Replaced: []string{KVCR}}
	rv.Builder = &provenance.Builder{Kvsweep: version}
	rv.Created = time.Unix(epoch, 0).UTC().Format(time.RFC3339)
	if rv.Platform == "" {
		rv.Platform = in.Platform
	}
	return rv
}

// BuildLayer builds the layered image of p through buildkitd, to the
// outputs of opts (as Build).
func BuildLayer(ctx context.Context, p *LayerPlan, opts ...Option) (*Result, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	c, bkVersion, err := connect(ctx, o.addr, o.connect)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rv := p.Revisions
	rv.Builder = &provenance.Builder{Kvsweep: o.version, BuildKit: bkVersion}
	tmp, err := os.MkdirTemp("", "kvsweep-layer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	mounts := map[string]string{"context": p.kvcrPath}
	if mounts["provenance"], err = writeRevisions(tmp, "provenance", rv); err != nil {
		return nil, err
	}
	for pl, prv := range p.Platforms {
		prv.Builder = rv.Builder
		if mounts[ProvenanceContext(pl)], err = writeRevisions(tmp, ProvenanceContext(pl), prv); err != nil {
			return nil, err
		}
	}
	dockerfile := ""
	if !strings.HasPrefix(p.Dockerfile, "(embedded)") {
		dockerfile = p.Dockerfile
	}
	dfDir, err := dockerfileDir(tmp, dockerfile, templates.KVCRLayerDockerfile())
	if err != nil {
		return nil, err
	}
	solve := client.SolveOpt{Frontend: "dockerfile.v0", FrontendAttrs: maps.Clone(p.FrontendAttrs)}
	mounts["dockerfile"] = dfDir
	if err := mount(&solve, mounts, dockerfile); err != nil {
		return nil, err
	}
	return solveImage(ctx, c, solve, o, rv, tmp)
}
