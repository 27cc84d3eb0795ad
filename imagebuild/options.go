package imagebuild

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/util/progress/progressui"
)

type options struct {
	addr         string
	progress     progressui.DisplayMode
	progressOut  io.Writer
	outputs      []Output
	insecure     bool
	cacheFrom    []client.CacheOptionsEntry
	cacheTo      []client.CacheOptionsEntry
	metadataFile string
	version      string
	connect      time.Duration
	allowMoving  bool
	// dockerMediaTypes: Docker schema 2 manifests instead of OCI ones.
	dockerMediaTypes bool
	allowDirty       bool
	offline          bool
	platforms        []string
	platform         string // Inspect: the platform of an index to read
}

// Option configures Resolve, Build and Inspect; each takes the options
// that concern it and ignores the others.
type Option func(*options) error

func apply(opts []Option) (*options, error) {
	o := &options{}
	for _, f := range opts {
		if err := f(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithAddr is the buildkitd address: unix://, tcp://, or
// docker-container://NAME for a buildx builder.
func WithAddr(addr string) Option { return func(o *options) error { o.addr = addr; return nil } }

// WithProgress shows BuildKit's progress on w: auto, tty, plain or quiet.
func WithProgress(mode string, w io.Writer) Option {
	return func(o *options) error {
		switch progressui.DisplayMode(mode) {
		case progressui.AutoMode, progressui.TtyMode, progressui.PlainMode, progressui.QuietMode:
		default:
			return fmt.Errorf("progress %q: expected auto, tty, plain or quiet", mode)
		}
		o.progress, o.progressOut = progressui.DisplayMode(mode), w
		return nil
	}
}

// WithPush pushes the image to ref.
func WithPush(ref string) Option {
	return func(o *options) error { o.outputs = append(o.outputs, Output{"image", ref}); return nil }
}

// WithOutput writes the image as oci:FILE, docker:FILE or squashfs:FILE.
func WithOutput(spec string) Option {
	return func(o *options) error {
		kind, dest, ok := strings.Cut(spec, ":")
		if !ok || dest == "" || (kind != "oci" && kind != "docker" && kind != "squashfs") {
			return fmt.Errorf("output %q: expected oci:FILE, docker:FILE or squashfs:FILE", spec)
		}
		o.outputs = append(o.outputs, Output{kind, dest})
		return nil
	}
}

// WithInsecureRegistry lets every registry access (the base image check,
// push, registry cache, inspect) use plain HTTP.
func WithInsecureRegistry() Option { return func(o *options) error { o.insecure = true; return nil } }

// WithCacheFrom imports build cache: type=registry,ref=R or type=local,src=DIR.
func WithCacheFrom(spec string) Option {
	return func(o *options) error {
		e, err := cacheEntry(spec)
		o.cacheFrom = append(o.cacheFrom, e)
		return err
	}
}

// WithCacheTo exports build cache: type=registry,ref=R[,mode=max] or type=local,dest=DIR.
func WithCacheTo(spec string) Option {
	return func(o *options) error {
		e, err := cacheEntry(spec)
		o.cacheTo = append(o.cacheTo, e)
		return err
	}
}

// WithMetadataFile writes source-revisions.json, with the pushed digest,
// next to the build output.
func WithMetadataFile(path string) Option {
	return func(o *options) error { o.metadataFile = path; return nil }
}

// WithVersion is the kvsweep version recorded in the image.
func WithVersion(v string) Option { return func(o *options) error { o.version = v; return nil } }

// WithAllowMoving makes Resolve accept a branch, building and recording
// the commit it points to now.
func WithAllowMoving() Option { return func(o *options) error { o.allowMoving = true; return nil } }

// WithAllowDirty makes Resolve accept a local checkout with uncommitted
// changes, recorded with a hash of the diff.
func WithAllowDirty() Option { return func(o *options) error { o.allowDirty = true; return nil } }

// WithOffline makes Resolve skip the registry check of the base image.
func WithOffline() Option { return func(o *options) error { o.offline = true; return nil } }

func cacheEntry(spec string) (client.CacheOptionsEntry, error) {
	e := client.CacheOptionsEntry{Attrs: map[string]string{}}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return e, fmt.Errorf("cache %q: expected type=registry,ref=REF or type=local with src=DIR or dest=DIR", spec)
		}
		if k == "type" {
			e.Type = v
		} else {
			e.Attrs[k] = v
		}
	}
	if e.Type != "registry" && e.Type != "local" && e.Type != "inline" {
		return e, fmt.Errorf("cache %q: type must be registry, local or inline", spec)
	}
	return e, nil
}

// WithDockerMediaTypes writes Docker schema 2 manifests instead of OCI
// ones (the labels still carry the record; Docker's manifest has no
// annotations). For clients that ask a registry for a manifest without
// saying they accept OCI, and registries that then answer 404: enroot
// 4.1's registry probe and a distribution 2.x registry are such a pair.
func WithDockerMediaTypes() Option {
	return func(o *options) error { o.dockerMediaTypes = true; return nil }
}
