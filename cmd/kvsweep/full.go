//go:build !lite

package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/kvsweep/kvsweep/coord"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/history/pg"
	"github.com/kvsweep/kvsweep/imagebuild"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render/kubejob"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/k8s"
	"github.com/kvsweep/kvsweep/sweep"
)

// The parts of kvsweep that link BuildKit, go-containerregistry, the etcd
// client, client-go and the PostgreSQL driver: the image builder, digest
// pinning, pins files, the etcd lock, scheduler k8s and the history store
// on PostgreSQL. A build with -tags lite leaves them
// out (lite.go).

func init() {
	scheduler.Register("k8s", k8s.Open)
	pg.Kvsweep = version() // importing history/pg registers postgres://
}

// migrateStore brings the schema of the database at url to this
// kvsweep's version.
func migrateStore(url string) (string, error) {
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

func pinnedCommits(pins string) (map[string]string, []string, error) {
	return imagebuild.PinnedCommits(pins)
}

func lockURL(ctx context.Context, url, sweepID string) (func(), error) {
	return coord.LockURL(ctx, url, sweepID)
}
