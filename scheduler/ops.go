package scheduler

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// Config picks and configures a scheduler.
type Config struct {
	// Name is "slurm" or "local"; empty means the scheduler of the sweep's
	// last submission, else the one its spec names.
	Name string
	// RetryDeadline bounds Slurm's retries of transient errors.
	RetryDeadline time.Duration
	// Parallel bounds the local executor's tasks at once (default: CPUs).
	Parallel int
	// GPUs is the local executor's GPU pool (ParseGPUs's syntax).
	GPUs string
	// Log receives retry notices and the local executor's messages.
	Log io.Writer
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

// Records is a scheduler that asks no one: status through it rests on the
// sweep's own records (journal, observed states, exit markers). It is what
// a machine that cannot reach the cluster has. It submits and cancels
// nothing.
type Records struct{}

func (Records) Name() string                              { return "records" }
func (Records) MaxArraySize(context.Context) (int, error) { return sweep.DefaultMaxArraySize, nil }
func (Records) Submit(context.Context, SubmitRequest) (string, error) {
	return "", fmt.Errorf("the sweep's records cannot submit")
}
func (Records) FindByName(context.Context, string, time.Time) ([]string, error) { return nil, nil }
func (Records) Poll(context.Context, []PollJob) (*Poll, error) {
	return &Poll{Tasks: map[string]sweep.TaskState{}, Accounting: true}, nil
}
func (Records) Cancel(context.Context, []string) error {
	return fmt.Errorf("the sweep's records cannot cancel")
}

// States returns each cell's state by cell id. When the scheduler cannot
// be asked (another machine, the controller down), warn is told why and
// the states come from the sweep's own records.
func States(ctx context.Context, dir string, sched Scheduler, warn func(error)) (map[string]sweep.CellState, error) {
	cells, _, err := Observe(ctx, dir, sched)
	if err != nil {
		warn(err)
		if cells, _, err = Status(ctx, dir, Records{}); err != nil {
			return nil, err
		}
	}
	out := make(map[string]sweep.CellState, len(cells))
	for _, c := range cells {
		out[c.ID] = sweep.CellState{TaskState: c.TaskState, Attempts: c.Attempt, Earlier: c.Earlier}
	}
	return out, nil
}

// Selection says which cells to resubmit.
type Selection struct {
	Failed  bool // the last attempt ended without success
	Missing bool // never submitted
	// Infra: the last attempt failed outside the test (InfraFailure).
	Infra bool
}

// Select returns the cells of the sweep in dir that the selection names;
// cells pending, running or completed are never chosen.
func Select(dir string, cells []CellStatus, s Selection) map[string]bool {
	only := map[string]bool{}
	for _, c := range cells {
		if (s.Failed && Terminal(c.State) && c.State != StateCompleted) ||
			(s.Missing && c.State == StateNotSubmitted) ||
			(s.Infra && InfraFailure(dir, c)) {
			only[c.ID] = true
		}
	}
	return only
}

// InfraFailure reports whether the cell's last attempt failed for a
// reason outside the test: its node failed, it was preempted, never
// booted or was lost, or it ended without its harness ever starting (no
// cells/ID/harness-started: an image that could not be pulled, a time
// limit spent waiting for one). A cancelled cell was someone's choice and
// is not one; neither is a harness that ran and failed.
func InfraFailure(dir string, c CellStatus) bool {
	switch {
	case sweep.OutsideTest(c.State):
		return true
	case c.State == StateFailed, c.State == StateTimeout, c.State == StateOOM, c.State == StateSpecialExit:
		return !sweep.IsFile(dir, sweep.CellsDir+"/"+c.ID+"/"+sweep.StartedFile)
	}
	return false
}

// Cancel cancels the live tasks of the sweep in dir: all of them, or those
// of the given cells. It returns how many tasks it cancelled; a cell that
// is not live is a usage error.
func Cancel(ctx context.Context, dir string, sched Scheduler, cellIDs []string) (int, error) {
	cells, _, err := Observe(ctx, dir, sched)
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, id := range cellIDs {
		want[id] = true
	}
	var targets []string
	for _, c := range cells {
		if c.Task == "" || Terminal(c.State) || (len(want) > 0 && !want[c.ID]) {
			continue
		}
		targets = append(targets, c.Task)
		delete(want, c.ID)
	}
	for id := range want {
		return 0, fail.Usagef("cell %q is not a live cell of this sweep", id)
	}
	if err := sched.Cancel(ctx, targets); err != nil {
		return 0, err
	}
	if c, ok := sched.(Cleaner); ok && len(cellIDs) == 0 {
		// The whole sweep: what the cluster keeps of its ended jobs goes
		// too; the sweep's records (observed.json) keep how they ended.
		return len(targets), c.Clean(ctx)
	}
	return len(targets), nil
}

// Cleaner is a scheduler that keeps objects of ended jobs (Kubernetes Jobs
// and pods): cancelling a whole sweep deletes them with the live ones.
type Cleaner interface {
	Clean(ctx context.Context) error
}

// FollowOptions control Watch.
type FollowOptions struct {
	Interval time.Duration
	// Show is called with each poll's cells.
	Show func([]CellStatus)
	// Submit is the base of automatic resubmissions (throttle, overrides).
	Submit SubmitOptions
	// Retried, if set, is told of each automatic resubmission: the cells
	// and the nodes they must avoid.
	Retried func(cells []CellStatus, exclude []string)
}

// Watch polls every interval until every submitted cell is terminal,
// calling Show with each poll's cells, and returns the last poll. Under
// the sweep's retry.infra policy (manifest RetryInfra = N) a cell whose
// attempt failed outside the test (InfraFailure) is submitted again, up
// to N times, never on the nodes its failed attempts ran on; a test
// failure is never retried.
func Watch(ctx context.Context, dir string, sched Scheduler, opts FollowOptions) ([]CellStatus, error) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	for {
		cells, _, err := Observe(ctx, dir, sched)
		if err != nil {
			return nil, err
		}
		if opts.Show != nil {
			opts.Show(cells)
		}
		retried, err := retryInfra(ctx, dir, sched, m.RetryInfra, cells, opts)
		if err != nil {
			return cells, err
		}
		if !retried && Done(cells) {
			return cells, nil
		}
		if retried {
			continue
		}
		select {
		case <-ctx.Done():
			return cells, fmt.Errorf("interrupted")
		case <-time.After(opts.Interval):
		}
	}
}

// retryInfra resubmits the cells whose last attempt failed outside the
// test and that have had at most limit attempts, one submission per set
// of nodes to avoid. It reports whether it submitted anything.
func retryInfra(ctx context.Context, dir string, sched Scheduler, limit int, cells []CellStatus, opts FollowOptions) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	groups := map[string][]CellStatus{}
	for _, c := range cells {
		if c.Attempt > limit || !InfraFailure(dir, c) {
			continue
		}
		var avoid []string
		if sched.Name() == "slurm" {
			avoid = failedNodes(c)
		}
		key := strings.Join(avoid, ",")
		groups[key] = append(groups[key], c)
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		so := opts.Submit
		so.Only = map[string]bool{}
		for _, c := range groups[key] {
			so.Only[c.ID] = true
		}
		if key != "" {
			so.Exclude = strings.Split(key, ",")
		}
		if _, err := Submit(ctx, dir, sched, so); err != nil {
			return false, fmt.Errorf("retrying %d cell(s) that failed outside the test: %w", len(groups[key]), err)
		}
		if opts.Retried != nil {
			opts.Retried(groups[key], so.Exclude)
		}
	}
	return len(groups) > 0, nil
}

// failedNodes lists the nodes a cell's attempts failed outside the test
// on: the last attempt's, and those of earlier such attempts.
func failedNodes(c CellStatus) []string {
	set := map[string]bool{}
	add := func(nodes string) {
		for _, n := range splitHostlist(nodes) {
			if n = strings.TrimSpace(n); n != "" && n != "None assigned" && n != "(null)" {
				set[n] = true
			}
		}
	}
	add(c.Nodes)
	for _, e := range c.Earlier {
		if sweep.OutsideTest(e.State) {
			add(e.Nodes)
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// splitHostlist splits a Slurm node list at the commas outside brackets:
// "a1,b[1,3]" is "a1" and "b[1,3]".
func splitHostlist(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
