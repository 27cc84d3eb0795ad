//go:build lite

package main

import (
	"context"
	"errors"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/sweep"
)

// A kvsweep built with -tags lite compiles in a third of the time (the
// README's demo uses it): it plans, renders, submits, follows, collects and
// reports, but has no image builder, no registry client and no etcd. The
// commands and options that need them say so.

var errLite = errors.New("this kvsweep was built with -tags lite, without BuildKit, the registry client, etcd and PostgreSQL; build it without the tag (go install ./cmd/kvsweep)")

// renderObjects is nil: render.Render refuses scheduler k8s.
var renderObjects func(*matrix.Spec, *sweep.Manifest, sweep.Job) ([]byte, error)

// noBinary refuses sweeps whose jobs run kvsweep job (etcd coordination).
var noBinary = errLite

func pinDigest(context.Context, string, bool) (string, error) {
	return "", errors.Join(errors.New("pinning the image's tag to a digest needs the registry client (--offline keeps the tag)"), errLite)
}

func expectedCommits(context.Context, string) (map[string]string, error) {
	return nil, errors.Join(errors.New("container.pins needs the pins reader"), errLite)
}

func pinnedCommits(string) (map[string]string, []string, error) {
	return nil, nil, errors.Join(errors.New("container.pins needs the pins reader"), errLite)
}

func buildRevisions(*env, *matrix.Spec, string, string, string, bool) (map[string]render.RevisionImage, []string, func(bool) error, error) {
	return nil, nil, nil, errors.Join(errors.New("--revisions builds images"), errLite)
}

func migrateStore(string) (string, error) {
	return "", errors.Join(errors.New("a postgres:// history store needs the PostgreSQL driver"), errLite)
}

func lockURL(context.Context, string, string) (func(), error) {
	return nil, errors.Join(errors.New("--lock needs the etcd client"), errLite)
}

func init() {
	register(&command{name: "bisect", args: "...", summary: "(not in a -tags lite build)",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			fs.SetInterspersed(false)
			return func(*env, []string) error { return errLite }
		}})
	register(&command{name: "image", args: "...", summary: "(not in a -tags lite build)",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			fs.SetInterspersed(false)
			return func(*env, []string) error { return errLite }
		}})
	// The job helpers without etcd: telemetry's scraper.
	register(&command{name: "job", args: "scrape [flags]", summary: "Helpers a running job uses (etcd's are not in a -tags lite build)",
		subs: []*command{jobScrapeCmd}})
}
