package imagebuild

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvsweep/kvsweep/provenance"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Inspection is what an image says about how it was built.
type Inspection struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"` // the platform's image manifest
	// Platform is the image's (os/arch); Index is the digest of the
	// index it was read from ("" for a plain image).
	Platform    string                      `json:"platform,omitempty"`
	Index       string                      `json:"index,omitempty"`
	Labels      map[string]string           `json:"labels"`
	User        string                      `json:"user,omitempty"` // the config's, as USER set it
	Annotations map[string]string           `json:"annotations,omitempty"`
	Revisions   *provenance.SourceRevisions `json:"source_revisions"`
}

// Inspect reads an image (REF in a registry, oci:FILE or docker:FILE) and
// the source-revisions.json inside it; of an index, the platform
// WithPlatform names (else linux/amd64's, else the first). No daemon is
// needed.
func Inspect(ctx context.Context, ref string, opts ...Option) (*Inspection, error) {
	o, err := apply(opts)
	if err != nil {
		return nil, err
	}
	imgs, index, cleanup, err := openImages(ctx, ref, o.insecure)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	im, err := pick(imgs, o.platform)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	return inspectOne(ref, index, im)
}

// InspectAll inspects every platform's image of REF: one Inspection for
// a plain image, one per platform for an index, in the index's order.
func InspectAll(ctx context.Context, ref string, opts ...Option) ([]*Inspection, error) {
	o, err := apply(opts)
	if err != nil {
		return nil, err
	}
	imgs, index, cleanup, err := openImages(ctx, ref, o.insecure)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var out []*Inspection
	for _, im := range imgs {
		in, err := inspectOne(ref, index, im)
		if err != nil {
			return out, err
		}
		out = append(out, in)
	}
	return out, nil
}

func inspectOne(ref, index string, im image) (*Inspection, error) {
	img := im.img
	in := &Inspection{Ref: ref, Index: index, Platform: im.platform}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	in.Digest = d.String()
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	in.Labels, in.User = cf.Config.Labels, cf.Config.User
	if m, err := img.Manifest(); err == nil {
		in.Annotations = m.Annotations
	}
	b, err := readFile(img, RevisionsPath)
	if err != nil {
		return in, err
	}
	if in.Revisions, err = provenance.Parse(b); err != nil {
		return in, fmt.Errorf("%s in %s: %w", RevisionsPath, ref, err)
	}
	return in, nil
}

// readFile returns a file of the image's flattened file system.
func readFile(img v1.Image, path string) ([]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	want := strings.TrimPrefix(path, "/")
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("the image has no %s: it was not built by kvsweep image build", path)
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "./") == want {
			return io.ReadAll(io.LimitReader(tr, 1<<20))
		}
	}
}

// untar unpacks a tar file into dir, refusing paths that leave it.
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		dst := filepath.Join(dir, h.Name)
		if !strings.HasPrefix(dst, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("%s: entry %q leaves the archive", file, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			out, err := os.Create(dst)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}

// Verify compares what an image records with resolved pins.
func Verify(in *Inspection, r *Resolved) []provenance.Mismatch {
	want := &provenance.SourceRevisions{Components: map[string]provenance.Component{}, Base: r.Base}
	for n, rev := range r.Revisions {
		want.Components[n] = rev.Component
	}
	return append(provenance.Compare(in.Revisions, want), platformMismatches(in, r)...)
}

// PinDigest returns ref pinned by the digest its registry serves now
// (NAME:TAG@sha256:...), so every job of a sweep runs exactly one image.
// A ref already pinned by digest, and a file (.sqsh, .sif, a path), are
// returned as they are. WithInsecureRegistry applies; WithPlatform pins
// an index (by tag or digest) to that platform's image, and refuses an
// image of another platform.
func PinDigest(ctx context.Context, ref string, opts ...Option) (string, error) {
	if strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, ".") || strings.HasSuffix(ref, ".sqsh") || strings.HasSuffix(ref, ".sif") {
		return ref, nil
	}
	o, err := apply(opts)
	if err != nil {
		return "", err
	}
	if o.platform != "" {
		return pinPlatform(ctx, ref, o)
	}
	if strings.Contains(ref, "@sha256:") {
		return ref, nil
	}
	var nopts []name.Option
	if o.insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return "", fmt.Errorf("image %q: %v", ref, err)
	}
	d, err := remote.Head(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return "", fmt.Errorf("resolving image %s to a digest: %v (pin it by digest, or render with --offline to keep the tag)", ref, err)
	}
	return ref + "@" + d.Digest.String(), nil
}

// ExpectedCommits resolves the pins file at path (offline: no registry
// check of the base) to the commit each component must be built from.
func ExpectedCommits(ctx context.Context, path string) (map[string]string, error) {
	p, err := LoadPins(path)
	if err != nil {
		return nil, err
	}
	r, err := Resolve(ctx, p, WithOffline(), WithAllowDirty(), WithAllowMoving())
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(r.Revisions))
	for n, rev := range r.Revisions {
		out[n] = rev.Commit
	}
	return out, nil
}
