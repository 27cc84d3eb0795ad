package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

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
	// Paced, if set, is told of each submission of cells that waited
	// for room in the queue.
	Paced func(*SubmitReport)
}

// Watch polls every interval until every submitted cell is terminal,
// calling Show with each poll's cells, and returns the last poll. Under
// the sweep's retry.infra policy (manifest RetryInfra = N) a cell whose
// attempt failed outside the test (InfraFailure) is submitted again, up
// to N times, never on the nodes its failed attempts ran on; a test
// failure is never retried. In a paced sweep (a submission left cells
// waiting for room in the queue) the cells still waiting are submitted as
// room appears, and the sweep is not done before they are.
func Watch(ctx context.Context, dir string, sched Scheduler, opts FollowOptions) ([]CellStatus, error) {
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if sh, ok := sched.(PollSharer); ok {
		sh.SharePolls(opts.Interval)
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
		waiting, err := submitWaiting(ctx, dir, sched, cells, opts)
		if err != nil {
			return cells, err
		}
		if !retried && waiting == 0 && Done(cells) {
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

// submitWaiting submits, in a paced sweep, the cells that wait for room
// in the queue, as many as it has room for now; it returns how many still
// wait or were just submitted (no poll has seen them yet). Another process submitting the sweep now is no error: it waits
// for the next round.
func submitWaiting(ctx context.Context, dir string, sched Scheduler, cells []CellStatus, opts FollowOptions) (int, error) {
	waiting := 0
	for _, c := range cells {
		if c.State == StateNotSubmitted {
			waiting++
		}
	}
	if waiting == 0 {
		return 0, nil
	}
	recs, err := sweep.ReadJournal(dir)
	if err != nil || !sweep.Paced(recs) {
		return 0, err
	}
	so := opts.Submit
	so.Only, so.Submitted = nil, nil
	rep, err := Submit(ctx, dir, sched, so)
	switch {
	case errors.Is(err, sweep.ErrBusy):
		return waiting, nil
	case err != nil:
		return waiting, fmt.Errorf("submitting the cells that waited for room: %w", err)
	}
	if rep.Cells > 0 && opts.Paced != nil {
		opts.Paced(rep)
	}
	return rep.Waiting + rep.Cells, nil
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
		if !sweep.OutsideTest(c.State) && sweep.GPUFault(dir, c.ID) {
			c.State = "GPU_FAULT" // what Retried tells of it
		}
		var avoid []string
		if sched.Name() == "slurm" {
			avoid = failedNodes(c, sweep.GPUFaultNodes(dir, c.ID))
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
// on: the last attempt's, those of earlier such attempts, and those its
// GPUs failed under it on (gpuFaults).
func failedNodes(c CellStatus, gpuFaults []string) []string {
	set := map[string]bool{}
	for _, n := range gpuFaults {
		set[n] = true
	}
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
