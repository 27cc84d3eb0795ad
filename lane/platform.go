package lane

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/scheduler"
)

// PlatformLister is what of the image builder tells an image's
// platforms (images.Builder has it): an index's, or a plain image's
// one. Without it the lane pins nothing to a platform the spec does not
// name.
type PlatformLister interface {
	ImagePlatforms(ctx context.Context, image string, insecure bool) ([]string, error)
}

// Platform is the platform of the nodes a spec's jobs run on, and where
// it was read: cluster.platform, or what the scheduler says of the
// partition's nodes.
type Platform struct {
	Platform, Source string
}

func (p Platform) String() string { return p.Platform + " (" + p.Source + ")" }

// NodesPlatform is the platform of the nodes the spec's jobs land on:
// cluster.platform when it is set, else what the scheduler tells of the
// partition's nodes (scheduler.Platformer: Slurm's Arch or features, the
// local executor's uname -m). Nodes of two platforms are refused naming
// them. A scheduler that tells nothing (k8s, whose nodes pull their own
// platform's image of an index) gives the zero Platform.
func (l *Lane) NodesPlatform(ctx context.Context, spec *matrix.Spec) (Platform, error) {
	if spec.Cluster.Platform != "" {
		return Platform{spec.Cluster.Platform, "cluster.platform"}, nil
	}
	cfg := scheduler.Config{RetryDeadline: time.Minute}
	if l.Submit.Sched != nil {
		cfg = *l.Submit.Sched
	}
	cfg.Log = l.Stderr
	name := cmp.Or(cfg.Name, spec.Scheduler, "slurm")
	p := scheduler.OpenPlatformer(name, cfg)
	if p == nil {
		return Platform{}, nil
	}
	part := spec.Cluster.Partition
	if v := l.Submit.Opts.Overrides["partition"]; v != "" {
		part = v
	}
	where := "scheduler " + name
	if name != "local" {
		where += ", partition " + part
		if part == "" {
			where = "scheduler " + name + ", the default partition"
		}
		if spec.Cluster.Constraint != "" {
			where += " with constraint " + spec.Cluster.Constraint
		}
	}
	nodes, err := p.NodePlatforms(ctx, scheduler.PlatformQuery{Partition: part, Constraint: spec.Cluster.Constraint})
	if err != nil {
		return Platform{}, fmt.Errorf("%s: reading its nodes' platform: %w", where, err)
	}
	plat, src, err := scheduler.OnePlatform(where, nodes)
	if err != nil {
		return Platform{}, err
	}
	return Platform{plat, where + ": " + src}, nil
}

// choosePlatform pins the spec to its nodes' platform when cluster.platform
// is not set and an image the jobs run is an index of several platforms:
// the platform the scheduler tells (NodesPlatform) becomes the spec's, so
// every image is pinned to that platform's image and each job checks its
// node, as with cluster.platform. Offline, with --revisions (the images
// are built from the pins' platforms) and without a PlatformLister
// nothing changes; an image whose platforms cannot be read is left to
// the pin (a tag) or runs as named, with a warning (a digest).
func (l *Lane) choosePlatform(ctx context.Context, spec *matrix.Spec) error {
	lister, ok := l.Tools.Images.(PlatformLister)
	if spec.Cluster.Platform != "" || !spec.RunsImage() || l.Render.Offline || l.Render.Revisions != "" || !ok {
		return nil
	}
	images := []string{cmp.Or(l.Render.Image, spec.Container.Image)}
	for _, name := range spec.EngineOrder {
		images = append(images, spec.Engines[name].Image)
	}
	for _, img := range images {
		if img == "" {
			continue
		}
		plats, err := lister.ImagePlatforms(ctx, img, l.Render.Insecure)
		if err != nil {
			// A tag is resolved next, which says why the registry
			// failed; an image pinned by digest runs as named.
			if strings.Contains(img, "@sha256:") {
				fmt.Fprintf(l.Stderr, "kvsweep: warning: the platforms of %s could not be read (%v): it runs as named; if it is an index of several platforms, set cluster.platform\n", img, err)
			}
			continue
		}
		if len(plats) < 2 {
			continue
		}
		p, err := l.NodesPlatform(ctx, spec)
		if err != nil {
			return fmt.Errorf("image %s is an index of %s and cluster.platform is not set: %w", img, strings.Join(plats, ", "), err)
		}
		if p.Platform == "" {
			return nil
		}
		spec.Cluster.Platform = p.Platform
		fmt.Fprintf(l.Stdout, "platform %s: images pinned to their %s image\n", p, p.Platform)
		return nil
	}
	return nil
}

// PlanPlatform is plan's line of the platform a render would pin an
// index of several platforms to, and where it comes from; "" when the
// jobs run no image. A scheduler that cannot be asked is said, not
// refused: plan writes nothing.
func (l *Lane) PlanPlatform(ctx context.Context, spec *matrix.Spec) string {
	if !spec.RunsImage() {
		return ""
	}
	p, err := l.NodesPlatform(ctx, spec)
	switch {
	case err != nil:
		return fmt.Sprintf("platform: not known, so an image that is an index of several platforms is refused at render until cluster.platform is set: %v", err)
	case p.Platform == "":
		return "platform: as the image names it (scheduler " + spec.Scheduler + " tells nothing of its nodes': each pulls its own platform's image of an index)"
	case p.Source == "cluster.platform":
		return "platform " + p.String() + ": every image is pinned to its " + p.Platform + " image, and each job checks its node"
	}
	return "platform " + p.String() + ": an image that is an index of several platforms is pinned to its " + p.Platform + " image, and each job checks its node"
}
