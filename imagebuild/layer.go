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
	// Revisions is what the layered image records.
	Revisions     provenance.SourceRevisions `json:"source_revisions"`
	FrontendAttrs map[string]string          `json:"frontend_attrs"`
	Dockerfile    string                     `json:"dockerfile"`
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
	in, err := Inspect(ctx, pinned, opts...)
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
	rv := *in.Revisions
	rv.Components = maps.Clone(rv.Components)
	if kv.Repo == "" {
		kv.Repo = rv.Components[KVCR].Repo
	}
	rv.Components[KVCR] = kv.Component
	name, _, _ := strings.Cut(pinned, "@")
	rv.LayeredOn = &provenance.Layer{Name: name, Digest: in.Digest, Replaced: []string{KVCR}}
	rv.Builder = &provenance.Builder{Kvsweep: o.version}
	// Reproducible: the newer of the image's time and the commit's.
	epoch := kv.CommitTime
	if t, err := time.Parse(time.RFC3339, rv.Created); err == nil {
		epoch = max(epoch, t.Unix())
	}
	rv.Created = time.Unix(epoch, 0).UTC().Format(time.RFC3339)
	user := in.User
	if user == "" {
		user = "0"
	}
	attrs := map[string]string{
		"build-arg:ON_IMAGE":            pinned,
		"build-arg:RUNTIME_USER":        user,
		"build-arg:SOURCE_DATE_EPOCH":   strconv.FormatInt(epoch, 10),
		"context:provenance":            "local:provenance",
		"label:dev.kvsweep.kvcr.commit": kv.Commit,
		"label:dev.kvsweep.layered-on":  name + "@" + in.Digest,
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
	return &LayerPlan{On: pinned, User: user, Revisions: rv, FrontendAttrs: attrs, Dockerfile: df, kvcrPath: kvcrPath}, nil
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
	provDir, err := writeRevisions(tmp, "provenance", rv)
	if err != nil {
		return nil, err
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
	mounts := map[string]string{"dockerfile": dfDir, "provenance": provDir, "context": p.kvcrPath}
	if err := mount(&solve, mounts, dockerfile); err != nil {
		return nil, err
	}
	return solveImage(ctx, c, solve, o, rv, tmp)
}
