package main

import (
	"os"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
	"github.com/kvsweep/kvsweep/scheduler/slurm"
	"github.com/kvsweep/kvsweep/sweep"
)

// The schedulers of every build (full.go adds k8s), and what they take
// from the environment: the scheduler packages read none of it.
func init() {
	scheduler.Register("slurm", openSlurm)
	scheduler.Register("local", local.Open)
	scheduler.RegisterPlatformer("slurm", func(c scheduler.Config) scheduler.Platformer { return newSlurm(c) })
	scheduler.RegisterPlatformer("local", func(scheduler.Config) scheduler.Platformer { return local.New(local.Config{}) })
	scheduler.CrashAt = os.Getenv("KVSWEEP_TEST_CRASH_AT")
}

// openSlurm opens scheduler slurm with the command line's settings and
// what the environment says of the cluster and the user ($SLURM_CONF,
// $KVSWEEP_POLL_CACHE, $USER), read when a sweep is opened.
func openSlurm(_ string, _ *sweep.Manifest, c scheduler.Config) (scheduler.Scheduler, error) {
	return newSlurm(c), nil
}

func newSlurm(c scheduler.Config) *slurm.Slurm {
	return slurm.New(slurm.Config{Deadline: c.RetryDeadline, Log: c.Log,
		Conf: os.Getenv("SLURM_CONF"), PollCache: os.Getenv("KVSWEEP_POLL_CACHE"), User: os.Getenv("USER")})
}
