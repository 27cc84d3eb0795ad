// Package local is scheduler local, the built-in executor: a sweep's job
// scripts run on this machine as child processes with the environment a
// Slurm job sees, its GPUs handed out from a pool, the journal written as
// Slurm's submissions are, so that everything after submit works
// unchanged. Its Submit only queues (a scheduler.Queue); Wait runs the
// tasks.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// Config is what the local executor is given.
type Config struct {
	// Dir is the sweep directory.
	Dir string
	// Parallel bounds the tasks at once (default: the number of CPUs); a
	// submission's array throttle lowers it.
	Parallel int
	Grace    time.Duration // default 10 s, like Slurm's KillWait
	Log      io.Writer
	// GPUs is the GPU pool (ParseGPUs): each task is given its job's
	// gpus_per_node of them, disjoint from every other running task's, as
	// CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES and SLURM_JOB_GPUS, and
	// waits until that many are free; a task needing none sees none. nil:
	// GPUs are not scheduled.
	GPUs []string
}

// Local is the built-in executor: it runs a sweep's rendered job scripts
// on this machine as child processes, each in its own process group, with
// the SLURM_* variables a Slurm job sees, at most Parallel at a time, and
// the time limit enforced (TERM, then KILL after Grace). It writes the same
// journal and the jobs write the same exit markers, so status, collect and
// report work unchanged. Submit queues tasks; Wait runs them (Local is a
// scheduler.Queue).
type Local struct {
	Config

	mu      sync.Mutex
	tasks   []*localTask
	journal *sweep.Journal
}

// New returns the local executor configured by cfg.
func New(cfg Config) *Local { return &Local{Config: cfg} }

// Open is the scheduler.Opener of scheduler local: the executor of the
// sweep in dir with the command line's --parallel and --gpus.
func Open(dir string, _ *sweep.Manifest, cfg scheduler.Config) (scheduler.Scheduler, error) {
	gpus, err := ParseGPUs(cfg.GPUs)
	if err != nil {
		return nil, fail.Usagef("%v", err)
	}
	return New(Config{Dir: dir, Parallel: cfg.Parallel, Log: cfg.Log, GPUs: gpus}), nil
}

type localTask struct {
	seq   int
	jobID string
	task  int // array task id, -1 for a plain job
	count int // tasks in the array
	req   scheduler.SubmitRequest
	state string
	exit  int
}

// Name implements scheduler.Scheduler.
func (l *Local) Name() string { return "local" }

// MaxArraySize implements scheduler.Scheduler: the local executor has no limit.
func (l *Local) MaxArraySize(context.Context) (int, error) { return math.MaxInt32, nil }

// Submit queues the tasks of r; the job id is the submission number.
func (l *Local) Submit(_ context.Context, r scheduler.SubmitRequest) (string, error) {
	if r.Hold {
		const msg = "--hold is not supported by the local executor"
		return "", &scheduler.RefusedError{Msg: msg, Err: errors.New("local: " + msg)}
	}
	id := strconv.Itoa(r.Seq)
	tasks := []int{-1}
	if r.Array != "" {
		var err error
		if tasks, err = sweep.ParseIndices(r.Array); err != nil {
			return "", err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Throttle > 0 && (l.Parallel <= 0 || r.Throttle < l.Parallel) {
		l.Parallel = r.Throttle
	}
	for _, t := range tasks {
		l.tasks = append(l.tasks, &localTask{seq: r.Seq, jobID: id, task: t, count: len(tasks), req: r, state: scheduler.StatePending})
	}
	return id, nil
}

// Wait runs every queued task, recording each in the journal j, and
// returns when all have ended. Cancelling ctx (Ctrl-C) terminates the
// running tasks and records the queued ones as CANCELLED.
func (l *Local) Wait(ctx context.Context, j *sweep.Journal) error {
	l.mu.Lock()
	tasks := l.tasks
	l.tasks = nil
	l.journal = j
	par := l.Parallel
	var pool *gpuPool
	if l.GPUs != nil {
		pool = newGPUPool(l.GPUs)
	}
	l.mu.Unlock()
	if par <= 0 {
		par = runtime.NumCPU()
	}
	seen := map[int]bool{}
	for _, t := range tasks {
		if !seen[t.seq] {
			seen[t.seq] = true
			// The executor's own pid: status in another process tells queued
			// tasks of a live executor from those of one that stopped.
			l.record(sweep.Record{Type: sweep.RecStarted, Seq: t.seq, PID: os.Getpid(), Note: "executor"})
		}
	}
	next := make(chan *localTask)
	var wg sync.WaitGroup
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				l.admitted(ctx, pool, t)
			}
		}()
	}
	for _, t := range tasks {
		if ctx.Err() != nil {
			l.finish(t, scheduler.StateCancelled, 0)
			continue
		}
		select {
		case next <- t:
		case <-ctx.Done():
			l.finish(t, scheduler.StateCancelled, 0)
		}
	}
	close(next)
	wg.Wait()
	return ctx.Err()
}

// admitted runs t once the pool has its GPUs, and gives them back however
// it ends.
func (l *Local) admitted(ctx context.Context, pool *gpuPool, t *localTask) {
	if pool == nil {
		l.run(ctx, t, nil)
		return
	}
	gpus, err := pool.acquire(ctx, t.req.GPUs)
	if err != nil {
		l.finish(t, scheduler.StateCancelled, 0)
		if ctx.Err() == nil {
			l.logf("kvsweep: local task %s: %v\n", scheduler.TaskKey(t.jobID, t.task), err)
		}
		return
	}
	defer pool.release(gpus)
	l.run(ctx, t, gpus)
}

// run runs one task; gpus, when not nil, are the only GPUs it may see.
func (l *Local) run(ctx context.Context, t *localTask, gpus []string) {
	r := t.req
	env, logName := taskEnv(t, gpus)
	logf, err := os.Create(filepath.Join(r.Dir, sweep.LogsDir, logName))
	if err != nil {
		l.finish(t, scheduler.StateFailed, 1)
		l.logf("kvsweep: local task %s: %v\n", scheduler.TaskKey(t.jobID, t.task), err)
		return
	}
	defer logf.Close()
	cmd := exec.Command("bash", r.Script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.Dir, env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		l.finish(t, scheduler.StateFailed, 1)
		l.logf("kvsweep: local task %s: %v\n", scheduler.TaskKey(t.jobID, t.task), err)
		return
	}
	l.record(sweep.Record{Type: sweep.RecStarted, Seq: t.seq, TaskID: scheduler.TaskKey(t.jobID, t.task), PID: cmd.Process.Pid})
	l.wait(ctx, t, cmd)
}

// taskEnv is a task's environment, as Slurm would give it (the job and
// array variables, the GPUs it was given) and the name of its log.
func taskEnv(t *localTask, gpus []string) (env []string, logName string) {
	r := t.req
	host, _ := os.Hostname()
	env = os.Environ()
	if gpus != nil {
		ids := strings.Join(gpus, ",")
		env = slices.DeleteFunc(env, func(kv string) bool {
			for _, k := range []string{"CUDA_VISIBLE_DEVICES=", "NVIDIA_VISIBLE_DEVICES=", "SLURM_JOB_GPUS=", "SLURM_STEP_GPUS=", "GPU_DEVICE_ORDINAL="} {
				if strings.HasPrefix(kv, k) {
					return true
				}
			}
			return false
		})
		env = append(env, "CUDA_VISIBLE_DEVICES="+ids, "SLURM_JOB_GPUS="+ids, "GPU_DEVICE_ORDINAL="+ids)
		if ids == "" {
			env = append(env, "NVIDIA_VISIBLE_DEVICES=void")
		} else {
			env = append(env, "NVIDIA_VISIBLE_DEVICES="+ids)
		}
	}
	env = append(env,
		"SLURM_JOB_ID="+strconv.Itoa(t.seq*1_000_000+t.task+1),
		"SLURM_JOB_NAME="+r.JobName,
		"SLURM_JOB_NODELIST="+host,
		"SLURM_JOB_NUM_NODES=1",
		"SLURM_SUBMIT_DIR="+r.Dir,
		"SLURM_CPUS_ON_NODE="+strconv.Itoa(runtime.NumCPU()),
		"SLURM_JOB_PARTITION=local",
		"KVSWEEP_INDEX_OFFSET="+strconv.Itoa(r.Offset),
	)
	logName = fmt.Sprintf("%s-%s.out", r.JobName, t.jobID)
	if t.task >= 0 {
		env = append(env,
			"SLURM_ARRAY_JOB_ID="+t.jobID,
			"SLURM_ARRAY_TASK_ID="+strconv.Itoa(t.task),
			"SLURM_ARRAY_TASK_COUNT="+strconv.Itoa(t.count),
		)
		logName = fmt.Sprintf("%s-%s_%d.out", r.JobName, t.jobID, t.task)
	}
	return env, logName
}

// wait waits for a started task, stopping its process group at the time
// limit or when ctx is cancelled (TERM, KILL after the grace period), and
// records how it ended.
func (l *Local) wait(ctx context.Context, t *localTask, cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	var mu sync.Mutex
	timedOut, cancelled := false, false
	stop := func(why *bool) {
		mu.Lock()
		*why = true
		mu.Unlock()
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		grace := l.Grace
		if grace == 0 {
			grace = 10 * time.Second
		}
		time.AfterFunc(grace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	}
	var timer *time.Timer
	if t.req.TimeLimit > 0 {
		timer = time.AfterFunc(t.req.TimeLimit, func() { stop(&timedOut) })
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop(&cancelled)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	if timer != nil {
		timer.Stop()
	}
	code := cmd.ProcessState.ExitCode()
	mu.Lock()
	defer mu.Unlock()
	var exitErr *exec.ExitError
	switch {
	case timedOut:
		l.finish(t, scheduler.StateTimeout, code)
	case cancelled:
		l.finish(t, scheduler.StateCancelled, code)
	case err == nil:
		l.finish(t, scheduler.StateCompleted, 0)
	case errors.As(err, &exitErr) && exitErr.Sys().(syscall.WaitStatus).Signaled() || code == 143:
		l.finish(t, scheduler.StateCancelled, code) // killed from outside: kvsweep cancel
	default:
		l.finish(t, scheduler.StateFailed, code)
	}
}

func (l *Local) finish(t *localTask, state string, code int) {
	t.state, t.exit = state, code
	l.record(sweep.Record{Type: sweep.RecFinished, Seq: t.seq, TaskID: scheduler.TaskKey(t.jobID, t.task), State: state, ExitCode: code})
}

func (l *Local) record(r sweep.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.journal == nil {
		return
	}
	if err := l.journal.Append(r); err != nil {
		l.logf("kvsweep: journal: %v\n", err)
	}
}

func (l *Local) logf(format string, args ...any) {
	if l.Log != nil {
		fmt.Fprintf(l.Log, format, args...)
	}
}

// FindByName implements scheduler.Scheduler for crash recovery: a submission whose
// tasks started under the executor is adopted.
func (l *Local) FindByName(_ context.Context, name string, _ time.Time) ([]string, error) {
	seq, ok := sweep.SubmissionSeq(name)
	if !ok {
		return nil, nil
	}
	recs, err := sweep.ReadJournal(l.Dir)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Seq == seq && r.Type == sweep.RecStarted && r.TaskID != "" {
			return []string{strconv.Itoa(seq)}, nil
		}
	}
	return nil, nil
}

// Poll implements scheduler.Scheduler from the journal: finished tasks have their
// state; started ones are RUNNING while their process lives; queued ones
// are PENDING while the executor lives. Anything else is left to the exit
// markers (Accounting is false).
func (l *Local) Poll(_ context.Context, jobs []scheduler.PollJob) (*scheduler.Poll, error) {
	p := &scheduler.Poll{Tasks: map[string]sweep.TaskState{}}
	recs, err := sweep.ReadJournal(l.Dir)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, j := range jobs {
		want[j.ID] = true
	}
	executor := map[int]int{}
	started := map[string]time.Time{}
	for _, r := range recs {
		if !want[strconv.Itoa(r.Seq)] {
			continue
		}
		switch {
		case r.Type == sweep.RecStarted && r.TaskID == "":
			executor[r.Seq] = r.PID
		case r.Type == sweep.RecStarted:
			started[r.TaskID] = r.Time
			if alive(r.PID) {
				p.Tasks[r.TaskID] = sweep.TaskState{State: scheduler.StateRunning, Source: "journal", Nodes: "localhost",
					Elapsed: scheduler.FormatElapsed(time.Since(r.Time))}
			}
		case r.Type == sweep.RecFinished:
			ts := sweep.TaskState{State: r.State, ExitCode: r.ExitCode, Source: "journal", Nodes: "localhost"}
			if t0, ok := started[r.TaskID]; ok {
				ts.Elapsed = scheduler.FormatElapsed(r.Time.Sub(t0))
			} else if r.State == scheduler.StateCancelled {
				ts.Nodes, ts.Reason = "", "cancelled while queued"
			}
			p.Tasks[r.TaskID] = ts
		}
	}
	// Tasks of a live executor that have not started are pending. The
	// manifest (megabytes for a large sweep) is read only when there are.
	var m *sweep.Manifest
	for _, s := range sweep.Submissions(recs) {
		if s.JobID == "" || !want[s.JobID] || !alive(executor[s.Intent.Seq]) {
			continue
		}
		if m == nil {
			if m, err = sweep.ReadManifest(l.Dir); err != nil {
				return nil, err
			}
		}
		idx, _ := sweep.ParseIndices(s.Intent.Indices)
		array := m.JobByName(s.Intent.Job) != nil && m.JobByName(s.Intent.Job).Array
		for _, i := range idx {
			k := scheduler.TaskKey(s.JobID, -1) // a plain job (--no-array) is one task
			if array {
				k = scheduler.TaskKey(s.JobID, i-s.Intent.Offset)
			}
			if _, ok := p.Tasks[k]; !ok {
				p.Tasks[k] = sweep.TaskState{State: scheduler.StatePending, Source: "journal", Reason: "queued in the local executor"}
			}
		}
	}
	return p, nil
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// Cancel implements scheduler.Scheduler: TERM to the process group of each running
// task named (a job id or a task key).
func (l *Local) Cancel(_ context.Context, targets []string) error {
	recs, err := sweep.ReadJournal(l.Dir)
	if err != nil {
		return err
	}
	finished := map[string]bool{}
	for _, r := range recs {
		if r.Type == sweep.RecFinished {
			finished[r.TaskID] = true
		}
	}
	match := func(task string) bool {
		for _, t := range targets {
			if task == t || strings.HasPrefix(task, t+"_") {
				return true
			}
		}
		return false
	}
	for _, r := range recs {
		if r.Type == sweep.RecStarted && r.TaskID != "" && !finished[r.TaskID] && match(r.TaskID) && alive(r.PID) {
			_ = syscall.Kill(-r.PID, syscall.SIGTERM)
		}
	}
	return nil
}
