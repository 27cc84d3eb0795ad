// Package slurm is scheduler slurm: a cluster driven through Slurm's
// command-line tools (sbatch, squeue, sacct, scontrol, scancel and
// sacctmgr), which is what most users have. It submits under the
// submission's name and finds a submission again by it, polls every task
// of a sweep in one sacct and one squeue (matched to the names submitted,
// and shared between the user's followers of the cluster), reads the
// queue's submit limits, and turns sbatch's refusals into
// scheduler.RefusedError. What it needs of the environment it is given
// in Config; cmd/kvsweep reads it.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is what scheduler slurm needs to know of the cluster and the
// user.
type Config struct {
	// Env is added to the environment of every command (SLURM_CONF=...).
	Env []string
	// Deadline bounds the retries of one operation (default 10 minutes).
	Deadline time.Duration
	// Log receives one line per retry (default: discarded).
	Log io.Writer
	// Conf is the slurm.conf Slurm's commands read on this machine
	// ($SLURM_CONF); empty: /etc/slurm/slurm.conf.
	Conf string
	// PollCache is the directory of the user's shared polls and limits
	// ($KVSWEEP_POLL_CACHE); "off" shares nothing; empty: the user's
	// cache directory.
	PollCache string
	// User names the submitting user where the system's user database
	// has no entry for this process ($USER).
	User string
}

// Slurm drives a cluster through its command-line tools (sbatch, squeue,
// sacct, scontrol, scancel), which is what most users have. Calls that fail
// for a transient reason (controller down, timeouts) are retried with
// capped exponential backoff until Config.Deadline; others fail at once.
type Slurm struct {
	cfg Config
	// Calls counts the commands run, for benchmarks and tests.
	Calls atomic.Int64
	// foreignSeen is what Poll has logged of other jobs' answers, so
	// each is said once.
	foreignSeen map[string]bool
	// Cache, when set, shares polls with the user's other followers of
	// the cluster (SharePolls sets it).
	Cache *PollCache
	// limits are the queue limits Room read, by QOS and account.
	limitsMu sync.Mutex
	limits   map[string]*slurmLimits
}

// New returns scheduler slurm configured by cfg.
func New(cfg Config) *Slurm { return &Slurm{cfg: cfg} }

// Name implements scheduler.Scheduler.
func (s *Slurm) Name() string { return "slurm" }

// SubmitConcurrency is how many sbatch calls one submit runs at once:
// each is a round trip to the controller, and a sweep of several resource
// shapes or more cells than MaxArraySize makes several.
func (s *Slurm) SubmitConcurrency() int { return 4 }

// exec1 runs one command once.
func (s *Slurm) exec1(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	s.Calls.Add(1)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), s.cfg.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A command left running when kvsweep dies (an sbatch in flight) is
	// killed with it: it cannot finish a submission after the next
	// kvsweep has settled its intent.
	err := runTied(cmd)
	if err == nil {
		return stdout.Bytes(), nil
	}
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		msg = strings.TrimSpace(stdout.String())
	}
	if msg == "" {
		msg = err.Error()
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		msg = fmt.Sprintf("%v (is Slurm installed and on PATH? To run the cells on this machine, set scheduler: local in the spec or pass --scheduler local)", ee)
	}
	return stdout.Bytes(), &SlurmError{Cmd: name, Msg: msg, Transient: transientRE().MatchString(msg)}
}

// backoff runs attempt until it succeeds, fails permanently, or the
// deadline passes; between tries it waits 1 s, 2 s, 4 s ... up to 30 s.
func (s *Slurm) backoff(ctx context.Context, what string, attempt func() error) error {
	deadline := s.cfg.Deadline
	if deadline == 0 {
		deadline = 10 * time.Minute
	}
	end := time.Now().Add(deadline)
	wait := time.Second
	for try := 1; ; try++ {
		err := attempt()
		var se *SlurmError
		if err == nil || !errors.As(err, &se) || !se.Transient {
			return err
		}
		if time.Now().Add(wait).After(end) {
			return fmt.Errorf("%w (still failing after %d tries over %s; raise --retry-deadline to wait longer)", err, try, deadline)
		}
		if s.cfg.Log != nil {
			fmt.Fprintf(s.cfg.Log, "kvsweep: %s: %s; retrying in %s\n", what, se.Msg, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 30*time.Second)
	}
}

// run is exec1 with retries, for idempotent commands.
func (s *Slurm) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	var out []byte
	err := s.backoff(ctx, name, func() error {
		var err error
		out, err = s.exec1(ctx, "", name, args...)
		return err
	})
	return out, err
}

// Cancel runs scancel on the given job or task ids ("123", "123_4").
func (s *Slurm) Cancel(ctx context.Context, targets []string) error {
	if len(targets) == 0 {
		return nil
	}
	_, err := s.run(ctx, "scancel", targets...)
	return err
}
