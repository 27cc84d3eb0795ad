package imagebuild

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kvsweep/kvsweep/provenance"
)

// PlatformImage is one platform's image of a build: its manifest digest
// and what it records.
type PlatformImage struct {
	Platform  string                     `json:"platform"`
	Digest    string                     `json:"digest"`
	Revisions provenance.SourceRevisions `json:"source_revisions"`
}

// WithPlatform makes Inspect read this platform's image of an index
// (by default linux/amd64's, else the index's first).
func WithPlatform(platform string) Option {
	return func(o *options) error { o.platform = platform; return nil }
}

// image is an image read from a reference: an index's images by platform
// ("os/arch"), in the index's order, or one image ("" platform, or its
// config's platform); indexDigest is "" for a plain image.
type image struct {
	platform string
	img      v1.Image
}

// openImages reads REF in a registry, oci:FILE or docker:FILE: every
// image of an index, or the one image.
func openImages(ctx context.Context, ref string, insecure bool) (imgs []image, index string, cleanup func(), err error) {
	cleanup = func() {}
	var idx v1.ImageIndex
	var one v1.Image
	switch {
	case strings.HasPrefix(ref, "oci:"):
		idx, one, cleanup, err = openLayout(strings.TrimPrefix(ref, "oci:"))
	case strings.HasPrefix(ref, "docker:"):
		one, err = tarball.ImageFromPath(strings.TrimPrefix(ref, "docker:"), nil)
	default:
		idx, one, err = openRemote(ctx, ref, insecure)
	}
	if err != nil {
		cleanup()
		return nil, "", func() {}, err
	}
	if one != nil {
		return []image{{platform: configPlatform(one), img: one}}, "", cleanup, nil
	}
	imgs, index, err = indexImages(idx)
	if err != nil {
		cleanup()
		return nil, "", func() {}, fmt.Errorf("%s: %w", ref, err)
	}
	return imgs, index, cleanup, nil
}

// indexImages lists an index's images with their platforms; attestation
// manifests (platform unknown/unknown) are not images.
func indexImages(idx v1.ImageIndex) ([]image, string, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, "", err
	}
	var out []image
	for _, m := range im.Manifests {
		if !m.MediaType.IsImage() || m.Platform == nil || m.Platform.OS == "unknown" {
			continue
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			return nil, "", err
		}
		out = append(out, image{platform: m.Platform.OS + "/" + m.Platform.Architecture, img: img})
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("the index %s lists no image", d)
	}
	return out, d.String(), nil
}

func configPlatform(img v1.Image) string {
	cf, err := img.ConfigFile()
	if err != nil || cf.OS == "" {
		return ""
	}
	return cf.OS + "/" + cf.Architecture
}

// openLayout unpacks an OCI layout tar and opens what its index.json
// names first: an index or an image.
func openLayout(file string) (v1.ImageIndex, v1.Image, func(), error) {
	dir, err := os.MkdirTemp("", "kvsweep-oci-")
	if err != nil {
		return nil, nil, func() {}, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := untar(file, dir); err != nil {
		return nil, nil, cleanup, err
	}
	lp, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, nil, cleanup, err
	}
	im, err := lp.IndexManifest()
	if err != nil || len(im.Manifests) == 0 {
		return nil, nil, cleanup, fmt.Errorf("oci:%s: no image in the OCI layout", file)
	}
	if m := im.Manifests[0]; m.MediaType.IsIndex() {
		idx, err := lp.ImageIndex(m.Digest)
		return idx, nil, cleanup, err
	}
	img, err := lp.Image(im.Manifests[0].Digest)
	return nil, img, cleanup, err
}

// openRemote reads REF from its registry: an index or an image.
func openRemote(ctx context.Context, ref string, insecure bool) (v1.ImageIndex, v1.Image, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return nil, nil, err
	}
	desc, err := remote.Get(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s", ref, shortErr(err))
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		return idx, nil, err
	}
	img, err := desc.Image()
	return nil, img, err
}

// pick is the image of platform in imgs: want, else linux/amd64's, else
// the first; an index without want is an error naming what it has.
func pick(imgs []image, want string) (image, error) {
	var have []string
	for _, im := range imgs {
		if want != "" && im.platform == want {
			return im, nil
		}
		have = append(have, im.platform)
	}
	if want != "" {
		return image{}, fmt.Errorf("no %s image: the image has %s", want, strings.Join(have, ", "))
	}
	for _, im := range imgs {
		if im.platform == PlatformAMD64 {
			return im, nil
		}
	}
	return imgs[0], nil
}

// platformMismatches: an image's record must name the platform its
// manifest is for, and that platform must be one the pins build.
func platformMismatches(in *Inspection, r *Resolved) []provenance.Mismatch {
	if in.Revisions == nil || in.Platform == "" {
		return nil
	}
	var out []provenance.Mismatch
	if rec := in.Revisions.Platform; rec != "" && rec != in.Platform {
		out = append(out, provenance.Mismatch{Component: "platform", Image: "manifest " + in.Platform + ", source-revisions.json " + rec, Pins: in.Platform})
	}
	if len(r.Platforms) > 0 && !slices.Contains(r.Platforms, in.Platform) {
		out = append(out, provenance.Mismatch{Component: "platform", Image: in.Platform, Pins: strings.Join(r.Platforms, ", ")})
	}
	return out
}

// platformImages fills res.Platforms from the first output that can be
// read back (a pushed image, an OCI or Docker file), so the metadata file
// lists each platform's digest beside its record; with only squashfs
// outputs, the records without digests. The metadata file is rewritten.
func platformImages(ctx context.Context, res *Result, plan *Plan, o *options) error {
	ref := ""
	for _, out := range o.outputs {
		switch out.Kind {
		case "image":
			ref = out.Dest
			if res.Digest != "" {
				ref = strings.SplitN(out.Dest, ",", 2)[0] + "@" + res.Digest
			}
		case "oci", "docker":
			ref = out.Kind + ":" + out.Dest
		}
		if ref != "" {
			break
		}
	}
	digests := map[string]string{}
	if ref != "" {
		imgs, _, cleanup, err := openImages(ctx, ref, o.insecure)
		if err != nil {
			return fmt.Errorf("reading back the build's images: %w", err)
		}
		defer cleanup()
		for _, im := range imgs {
			if d, err := im.img.Digest(); err == nil {
				digests[im.platform] = d.String()
			}
		}
	}
	for _, pl := range slices.Sorted(maps.Keys(plan.Platforms)) {
		res.Platforms = append(res.Platforms, PlatformImage{Platform: pl, Digest: digests[pl], Revisions: plan.Platforms[pl]})
	}
	if o.metadataFile == "" {
		return nil
	}
	return writeOutputs(ctx, res, &options{metadataFile: o.metadataFile}, "")
}

// VerifyAll verifies every platform's image of an index (or the one
// image) against r, and that there is an image for every platform r
// builds; with several images, each mismatch names its platform.
func VerifyAll(ins []*Inspection, r *Resolved) []provenance.Mismatch {
	var out []provenance.Mismatch
	have := map[string]bool{}
	for _, in := range ins {
		have[in.Platform] = true
		for _, m := range Verify(in, r) {
			if len(ins) > 1 {
				m.Component = in.Platform + " " + m.Component
			}
			out = append(out, m)
		}
	}
	if len(ins) == 1 && ins[0].Platform == "" {
		return out // a plain image that names no platform: nothing to list
	}
	for _, pl := range r.Platforms {
		if !have[pl] {
			out = append(out, provenance.Mismatch{Component: "platform " + pl, Image: "none", Pins: pl})
		}
	}
	return out
}

// pinPlatform is ref (NAME[:TAG][@DIGEST]) pinned to the image of
// o.platform: an index's entry for it, or the image itself when its
// config says that platform. NAME[:TAG]@DIGEST of the platform's image.
func pinPlatform(ctx context.Context, ref string, o *options) (string, error) {
	base, _, _ := strings.Cut(ref, "@")
	imgs, _, cleanup, err := openImages(ctx, ref, o.insecure)
	if err != nil {
		return "", fmt.Errorf("resolving image %s for %s: %v", ref, o.platform, err)
	}
	defer cleanup()
	var have []string
	for _, im := range imgs {
		if im.platform == o.platform {
			d, err := im.img.Digest()
			if err != nil {
				return "", err
			}
			return base + "@" + d.String(), nil
		}
		have = append(have, cmp.Or(im.platform, "no platform"))
	}
	return "", fmt.Errorf("image %s has no %s image (it has %s): build it for %s (kvsweep image build --platform), or set cluster.platform to the nodes' platform", ref, o.platform, strings.Join(have, ", "), o.platform)
}
