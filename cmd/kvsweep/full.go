//go:build !lite

package main

import (
	"context"
	"path/filepath"

	"github.com/kvsweep/kvsweep/coord"
	"github.com/kvsweep/kvsweep/imagebuild"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render/kubejob"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/k8s"
	"github.com/kvsweep/kvsweep/sweep"
)

// The parts of kvsweep that link BuildKit, go-containerregistry, the etcd
// client and client-go: the image builder, digest pinning, pins files,
// the etcd lock and scheduler k8s. A build with -tags lite leaves them
// out (lite.go).

func init() { scheduler.Register("k8s", k8s.Open) }

// renderObjects renders the Kubernetes Job of a job (scheduler k8s).
func renderObjects(spec *matrix.Spec, m *sweep.Manifest, j sweep.Job) ([]byte, error) {
	return kubejob.Render(spec, m, j, kubejob.Options{SpecDir: filepath.Dir(spec.File)})
}

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
