//go:build !lite

package main

import (
	"context"

	"github.com/kvsweep/kvsweep/coord"
	"github.com/kvsweep/kvsweep/imagebuild"
)

// The parts of kvsweep that link BuildKit, go-containerregistry and the
// etcd client: the image builder, digest pinning, pins files and the
// etcd lock. A build with -tags lite leaves them out (lite.go).

// noBinary is nil: this kvsweep can run every job's kvsweep job step.
var noBinary error

func pinDigest(ctx context.Context, image string, insecure bool) (string, error) {
	var opts []imagebuild.Option
	if insecure {
		opts = append(opts, imagebuild.WithInsecureRegistry())
	}
	return imagebuild.PinDigest(ctx, image, opts...)
}

func expectedCommits(ctx context.Context, pins string) (map[string]string, error) {
	return imagebuild.ExpectedCommits(ctx, pins)
}

func lockURL(ctx context.Context, url, sweepID string) (func(), error) {
	return coord.LockURL(ctx, url, sweepID)
}
