//go:build !lite

package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kvsweep/kvsweep/coord"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/history/pg"
	"github.com/kvsweep/kvsweep/imagebuild"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render/kubejob"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/k8s"
	"github.com/kvsweep/kvsweep/sweep"
)

// The parts of kvsweep that link BuildKit, go-containerregistry, the etcd
// client, client-go and the PostgreSQL driver: the image builder, digest
// pinning, pins files, the etcd lock, scheduler k8s and the history store
// on PostgreSQL, set once into the lanes' tools. A build with -tags lite
// leaves them out (lite.go).

func init() {
	scheduler.Register("k8s", k8s.Open)
	pg.Kvsweep = version() // importing history/pg registers postgres://
	tools = lane.Tools{Images: images{}, Objects: renderObjects, Lock: coord.LockURL}
	migrateStore = migratePG
}

// migratePG brings the schema of the database at url to this kvsweep's
// version.
func migratePG(url string) (string, error) {
	from, to, err := pg.Migrate(url)
	switch {
	case err != nil:
		return "", err
	case from == to:
		return fmt.Sprintf("history store %s: schema version %d, this kvsweep's: nothing to do", history.Redact(url), to), nil
	}
	return fmt.Sprintf("history store %s: schema version %d migrated to %d", history.Redact(url), from, to), nil
}

// renderObjects renders the Kubernetes Job of a job (scheduler k8s).
func renderObjects(spec *matrix.Spec, m *sweep.Manifest, j sweep.Job) ([]byte, error) {
	return kubejob.Render(spec, m, j, kubejob.Options{SpecDir: filepath.Dir(spec.File)})
}

// images is lane.Images over imagebuild.
type images struct{}

func (images) PinDigest(ctx context.Context, image string, insecure bool) (string, error) {
	return imagebuild.PinDigest(ctx, image, insecureOpt(insecure)...)
}

func (images) ExpectedCommits(ctx context.Context, pins string) (map[string]string, error) {
	return imagebuild.ExpectedCommits(ctx, pins)
}

func (images) PinnedCommits(pins string) (map[string]string, []string, error) {
	return imagebuild.PinnedCommits(pins)
}

func (images) Pins(path string) (*lane.Pins, error) {
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

func (images) Resolve(ctx context.Context, path string, refs, paths map[string]string, insecure bool) (lane.Resolved, error) {
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

func (images) Inspect(ctx context.Context, ref string, insecure bool) (string, map[string]string, error) {
	in, err := imagebuild.Inspect(ctx, ref, insecureOpt(insecure)...)
	if err != nil || in.Revisions == nil {
		return "", nil, err
	}
	return in.Digest, commitsOf(in.Revisions), nil
}

func (images) Build(ctx context.Context, r lane.Resolved, req lane.ImageRequest) (string, map[string]string, error) {
	opts := append(insecureOpt(req.Insecure), imagebuild.WithPush(req.Tag), imagebuild.WithProgress("quiet", io.Discard), imagebuild.WithVersion(version()))
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
