package scheduler

import (
	"io"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// Config picks a scheduler and holds what the command line says of it;
// each scheduler's opener (Register) makes its own configuration of it.
type Config struct {
	// Name is "slurm", "local" or another registered scheduler ("k8s");
	// empty means the scheduler of the sweep's last submission, else the
	// one its spec names.
	Name string
	// RetryDeadline bounds the retries of transient errors (Slurm's
	// controller, the Kubernetes API server).
	RetryDeadline time.Duration
	// Parallel bounds the local executor's tasks at once (default: CPUs).
	Parallel int
	// GPUs is the local executor's GPU pool (local.ParseGPUs's syntax).
	GPUs string
	// Log receives retry notices and the local executor's messages.
	Log io.Writer
	// KubeQPS and KubeBurst are the Kubernetes client's rate limit
	// (requests per second, and the burst above it); 0 for the defaults.
	KubeQPS   float32
	KubeBurst int
}

// Open reads the manifest of the sweep in dir and returns the scheduler
// for it (see Config.Name).
func Open(dir string, cfg Config) (*sweep.Manifest, Scheduler, error) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	name := cfg.Name
	if name == "" {
		recs, _ := sweep.ReadJournal(dir)
		for _, r := range recs {
			if r.Type == sweep.RecIntent {
				name = r.Scheduler
			}
		}
	}
	if name == "" {
		name = m.Scheduler
	}
	if cfg.GPUs != "" && name != "local" {
		return nil, nil, fail.Usagef("--gpus is the local executor's GPU pool; under Slurm the job's GPUs are what Slurm allocates (gpus_per_node)")
	}
	if name == "" {
		name = "slurm"
	}
	if open := opened[name]; open != nil {
		s, err := open(dir, m, cfg)
		return m, s, err
	}
	if name == "k8s" {
		return nil, nil, fail.Usagef("scheduler k8s: this kvsweep was built without the Kubernetes client (-tags lite); build it without the tag")
	}
	return nil, nil, fail.Usagef("--scheduler %q: expected slurm, local or k8s", name)
}

// Opener returns the scheduler name for the sweep in dir (its manifest m).
type Opener func(dir string, m *sweep.Manifest, cfg Config) (Scheduler, error)

var opened = map[string]Opener{}

// Register adds a scheduler Open can return. Every scheduler lives in a
// package of its own beneath this one and the command registers it
// (cmd/kvsweep: slurm and local in every build, k8s, whose client is too
// heavy for every build, in the full one).
func Register(name string, open Opener) { opened[name] = open }
