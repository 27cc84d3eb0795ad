// Package images gives a lane its images through kvsweep's image
// builder (imagebuild: BuildKit and the registry client). The full build
// of kvsweep sets a Builder into lane.Tools; a lite build links none of
// it, which is why it is a package of its own beneath lane.
package images

import (
	"context"
	"io"

	"github.com/kvsweep/kvsweep/imagebuild"
	"github.com/kvsweep/kvsweep/lane"
)

// Builder is lane.Images over imagebuild: BuildKit and the registry
// client. Version is kvsweep's, recorded in the images it builds.
type Builder struct{ Version string }

func (b Builder) PinDigest(ctx context.Context, image, platform string, insecure bool) (string, error) {
	opts := insecureOpt(insecure)
	if platform != "" {
		opts = append(opts, imagebuild.WithPlatform(platform))
	}
	return imagebuild.PinDigest(ctx, image, opts...)
}

func (b Builder) ExpectedCommits(ctx context.Context, pins string) (map[string]string, error) {
	return imagebuild.ExpectedCommits(ctx, pins)
}

func (b Builder) PinnedCommits(pins string) (map[string]string, []string, error) {
	return imagebuild.PinnedCommits(pins)
}

func (b Builder) Pins(path string) (*lane.Pins, error) {
	p, err := imagebuild.LoadPins(path)
	if err != nil {
		return nil, err
	}
	out := &lane.Pins{File: p.File}
	for _, c := range p.Components {
		out.Components = append(out.Components, lane.Component{Name: c.Name, Path: c.Path, Repo: c.Repo})
	}
	return out, nil
}

func (b Builder) Resolve(ctx context.Context, path string, refs, paths map[string]string, insecure bool) (lane.Resolved, error) {
	pins, err := imagebuild.LoadPins(path)
	if err != nil {
		return nil, err
	}
	for i := range pins.Components {
		s := &pins.Components[i]
		if ref, ok := refs[s.Name]; ok {
			s.Ref = ref
		}
		if p, ok := paths[s.Name]; ok {
			s.Path = p
		}
	}
	r, err := imagebuild.Resolve(ctx, pins, insecureOpt(insecure)...)
	if err != nil {
		return nil, err
	}
	return resolved{r}, nil
}

func (b Builder) Inspect(ctx context.Context, ref string, insecure bool) (string, map[string]string, error) {
	in, err := imagebuild.Inspect(ctx, ref, insecureOpt(insecure)...)
	if err != nil || in.Revisions == nil {
		return "", nil, err
	}
	return in.Digest, commitsOf(in.Revisions), nil
}

func (b Builder) Build(ctx context.Context, r lane.Resolved, req lane.ImageRequest) (string, map[string]string, error) {
	opts := append(insecureOpt(req.Insecure), imagebuild.WithPush(req.Tag), imagebuild.WithProgress("quiet", io.Discard), imagebuild.WithVersion(b.Version))
	if req.Addr != "" {
		opts = append(opts, imagebuild.WithAddr(req.Addr))
	}
	if req.MediaTypes == "docker" {
		opts = append(opts, imagebuild.WithDockerMediaTypes())
	}
	res, err := imagebuild.Build(ctx, r.(resolved).Resolved, opts...)
	if err != nil {
		return "", nil, err
	}
	return res.Digest, commitsOf(&res.Revisions), nil
}

// resolved is imagebuild's resolution as a lane.Resolved.
type resolved struct{ *imagebuild.Resolved }

func (r resolved) Commits() map[string]string {
	out := map[string]string{}
	for name, rev := range r.Revisions {
		out[name] = rev.Commit
	}
	return out
}

// commitsOf is the commit of each component an image records.
func commitsOf(r interface {
	Names() []string
	Commit(string) string
}) map[string]string {
	out := map[string]string{}
	for _, name := range r.Names() {
		out[name] = r.Commit(name)
	}
	return out
}

// insecureOpt is the option that lets plain-HTTP registries through.
func insecureOpt(on bool) []imagebuild.Option {
	if on {
		return []imagebuild.Option{imagebuild.WithInsecureRegistry()}
	}
	return nil
}

// ImagePlatforms implements lane.PlatformLister.
func (b Builder) ImagePlatforms(ctx context.Context, image string, insecure bool) ([]string, error) {
	return imagebuild.ImagePlatforms(ctx, image, insecureOpt(insecure)...)
}
