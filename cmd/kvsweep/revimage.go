//go:build !lite

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kvsweep/kvsweep/imagebuild"
)

// revImages builds the image of the pins with some components at other
// revisions (a bisect's probe, a revision of a PR stack), pushes it, and
// records it in a directory; an image already recorded, or already pushed
// with the same commits, is not built again.
type revImages struct {
	pins             *imagebuild.Pins
	addr, mediaTypes string
	insecure         bool
}

// probeImage is what image.json records of an image.
type probeImage struct {
	Ref    string            `json:"ref"` // REPO:TAG@DIGEST
	Expect map[string]string `json:"expect"`
}

// image returns the image with the components of refs at those revisions
// (a commit, tag or branch of a repository; a revision of a checkout),
// pushed as tag and recorded in dir/image.json. journal hears of each
// build and reuse. A build that fails is no error: its reason is
// returned instead ("does not build: ...").
func (b *revImages) image(ctx context.Context, refs map[string]string, tag, dir string, journal func(event, detail string)) (*probeImage, string, error) {
	record := filepath.Join(dir, "image.json")
	var im probeImage
	if data, err := os.ReadFile(record); err == nil && jsonUnmarshal(data, &im) == nil && im.Ref != "" {
		return &im, "", nil
	}
	r, err := b.resolve(ctx, refs, dir)
	if err != nil {
		return nil, "", err
	}
	if in, err := imagebuild.Inspect(ctx, tag, b.registryOpts()...); err == nil && in.Revisions != nil && sameCommits(in.Revisions, r) {
		im = probeImage{Ref: tag + "@" + in.Digest, Expect: commitsOf(in.Revisions)}
		journal("reuse", im.Ref)
		return &im, "", writeJSON(record, im)
	}
	journal("build", tag)
	start := time.Now()
	res, err := imagebuild.Build(ctx, r, b.buildOpts(tag)...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		journal("build-failed", err.Error())
		return nil, "does not build: " + lastLine(err.Error()), nil
	}
	im = probeImage{Ref: tag + "@" + res.Digest, Expect: commitsOf(&res.Revisions)}
	journal("built", fmt.Sprintf("%s in %.1fs", im.Ref, time.Since(start).Seconds()))
	return &im, "", writeJSON(record, im)
}

// sameCommits reports whether an image records the resolved commits.
func sameCommits(have interface{ Commit(string) string }, r *imagebuild.Resolved) bool {
	for name, rev := range r.Revisions {
		if have.Commit(name) != rev.Commit {
			return false
		}
	}
	return true
}

// resolve resolves the pins with the components of refs at their
// revisions: a checkout's by a clone of it at the revision (sharing its
// objects, in dir/src-NAME), a repository's by the ref.
func (b *revImages) resolve(ctx context.Context, refs map[string]string, dir string) (*imagebuild.Resolved, error) {
	pins := *b.pins
	pins.Components = append([]imagebuild.Source(nil), b.pins.Components...)
	for i := range pins.Components {
		s := &pins.Components[i]
		ref, ok := refs[s.Name]
		if !ok {
			continue
		}
		if s.Path == "" {
			s.Ref = ref
			continue
		}
		src := filepath.Join(dir, "src-"+s.Name)
		if err := os.RemoveAll(src); err != nil {
			return nil, err
		}
		if err := runGit(ctx, "", "clone", "--quiet", "--shared", "--no-checkout", "--end-of-options", s.Path, src); err != nil {
			return nil, err
		}
		if err := runGit(ctx, src, "checkout", "--quiet", "--detach", ref, "--"); err != nil {
			return nil, fmt.Errorf("%s at %q: %w", s.Name, ref, err)
		}
		s.Path = src
	}
	return imagebuild.Resolve(ctx, &pins, b.registryOpts()...)
}

func (b *revImages) registryOpts() []imagebuild.Option {
	if b.insecure {
		return []imagebuild.Option{imagebuild.WithInsecureRegistry()}
	}
	return nil
}

func (b *revImages) buildOpts(tag string) []imagebuild.Option {
	opts := append(b.registryOpts(), imagebuild.WithPush(tag), imagebuild.WithProgress("quiet", io.Discard), imagebuild.WithVersion(version()))
	if b.addr != "" {
		opts = append(opts, imagebuild.WithAddr(b.addr))
	}
	if b.mediaTypes == "docker" {
		opts = append(opts, imagebuild.WithDockerMediaTypes())
	}
	return opts
}
