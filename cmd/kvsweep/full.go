//go:build !lite

package main

import (
	"fmt"
	"path/filepath"

	"github.com/kvsweep/kvsweep/coord"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/history/pg"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/lane/images"
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
	tools = lane.Tools{Images: images.Builder{Version: version()}, Objects: renderObjects, Lock: coord.LockURL}
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
