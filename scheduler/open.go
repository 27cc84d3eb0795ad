package scheduler

import (
	"io"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// Config picks and configures a scheduler.
type Config struct {
	// Name is "slurm", "local" or a registered scheduler ("k8s"); empty
	// means the scheduler of the sweep's last submission, else the one its
	// spec names.
	Name string
	// RetryDeadline bounds Slurm's retries of transient errors.
	RetryDeadline time.Duration
	// Parallel bounds the local executor's tasks at once (default: CPUs).
	Parallel int
	// GPUs is the local executor's GPU pool (ParseGPUs's syntax).
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
	if open := opened[name]; open != nil {
		s, err := open(dir, m, cfg)
		return m, s, err
	}
	switch name {
	case "slurm", "":
		return m, &Slurm{Deadline: cfg.RetryDeadline, Log: cfg.Log}, nil
	case "local":
		gpus, err := ParseGPUs(cfg.GPUs)
		if err != nil {
			return nil, nil, fail.Usagef("%v", err)
		}
		return m, &Local{Dir: dir, Parallel: cfg.Parallel, Log: cfg.Log, GPUs: gpus}, nil
	}
	if name == "k8s" {
		return nil, nil, fail.Usagef("scheduler k8s: this kvsweep was built without the Kubernetes client (-tags lite); build it without the tag")
	}
	return nil, nil, fail.Usagef("--scheduler %q: expected slurm, local or k8s", name)
}

// Opener returns the scheduler name for the sweep in dir (its manifest m).
type Opener func(dir string, m *sweep.Manifest, cfg Config) (Scheduler, error)

var opened = map[string]Opener{}

// Register adds a scheduler Open can return, for schedulers whose clients
// are too heavy for every build (Kubernetes): the full build registers
// them.
func Register(name string, open Opener) { opened[name] = open }
