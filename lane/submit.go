package lane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/scheduler"
)

// What a submission is called, and the scheduler, in what Submit says.
var (
	submitCall     = map[string]string{"slurm": "sbatch", "local": "local", "k8s": "Job create"}
	schedulerTitle = map[string]string{"slurm": "Slurm", "local": "the local executor", "k8s": "the Kubernetes API"}
)

// SubmitDir submits the cells of dir in only (nil: every unsubmitted
// cell); the local executor runs them before it returns.
func (l *Lane) SubmitDir(ctx context.Context, dir string, only map[string]bool) error {
	m, sched, err := l.Open(dir)
	if err != nil {
		return err
	}
	o := &l.Submit
	if o.Lock != "" && !o.Opts.DryRun {
		if l.Tools.Lock == nil {
			return errors.Join(errors.New("--lock needs the etcd client"), ErrLite)
		}
		release, err := l.Tools.Lock(ctx, o.Lock, m.SweepID)
		if err != nil {
			return err
		}
		defer release()
	}
	opts := o.Opts
	opts.Only, opts.Out = only, l.Stdout
	if opts.Exclude, err = l.excluded(); err != nil {
		return err
	}
	opts.Submitted = func(rep *scheduler.SubmitReport) {
		fmt.Fprintf(l.Stdout, "submitted %d cells of sweep %s in %d %s calls\n", rep.Cells, m.SweepID, rep.Calls, submitCall[sched.Name()])
	}
	stopProgress := l.localProgress(dir, sched, &opts)
	rep, err := scheduler.Submit(ctx, dir, sched, opts)
	stopProgress(rep)
	if rep != nil && rep.Adopted+rep.Abandoned > 0 {
		fmt.Fprintf(l.Stderr, "kvsweep: settled earlier unconfirmed submissions: %d adopted from %s, %d never received\n", rep.Adopted, schedulerTitle[sched.Name()], rep.Abandoned)
	}
	if err == nil && rep.Waiting > 0 {
		fmt.Fprintf(l.Stdout, "%d cells wait for room in the queue (%s): kvsweep status %s --watch, run --wait and ci submit them as room appears; or run kvsweep submit %s again\n",
			rep.Waiting, WaitReason(rep), dir, dir)
	}
	if err == nil && rep.Final != nil {
		printLocalRun(l.Stdout, m.SweepID, rep)
	}
	return err
}

// excluded is --exclude and, with --exclude-bad-nodes, the ledger's bad
// nodes, said on stderr.
func (l *Lane) excluded() ([]string, error) {
	o := &l.Submit
	if o.BadNodes <= 0 {
		return o.Opts.Exclude, nil
	}
	h := history.OpenLazy(o.Store, true)
	defer h.Close()
	ledger, err := analysis.LedgerFromStore(h, o.BadWindow, time.Now())
	if err != nil {
		return nil, err
	}
	bad := analysis.Exclusions(ledger, o.BadNodes)
	if len(bad) > 0 {
		fmt.Fprintf(l.Stderr, "kvsweep: keeping out %d node(s) with at least %d infra failure(s) in the last %s: %s\n", len(bad), o.BadNodes, o.BadWindow, strings.Join(bad, ", "))
	}
	return append(append([]string(nil), o.Opts.Exclude...), bad...), nil
}

// WaitReason is why cells wait: sbatch's refusal, or the limit that
// leaves no room.
func WaitReason(rep *scheduler.SubmitReport) string {
	if rep.Refused != "" || rep.Room == nil {
		return cmp.Or(rep.Refused, "sbatch refused a submission for a submit limit")
	}
	return rep.Room.String()
}

// localProgress shows the local executor's progress while Submit runs
// the cells (it runs them before it returns); the function it returns
// stops it with the final states.
func (l *Lane) localProgress(dir string, sched scheduler.Scheduler, opts *scheduler.SubmitOptions) func(*scheduler.SubmitReport) {
	var stopProgress func([]scheduler.CellStatus)
	if _, queue := sched.(scheduler.Queue); queue && !opts.DryRun {
		show := l.show()
		submitted := opts.Submitted
		opts.Submitted = func(rep *scheduler.SubmitReport) {
			submitted(rep)
			stopProgress = followLocal(dir, sched, show)
		}
	}
	return func(rep *scheduler.SubmitReport) {
		if stopProgress == nil {
			return
		}
		var final []scheduler.CellStatus
		if rep != nil {
			final = rep.Final
		}
		stopProgress(final)
	}
}

// followLocal shows the progress of the local executor while it runs the
// sweep in dir, from the sweep's records once a second, until stop. The
// last call shows the final states.
func followLocal(dir string, sched scheduler.Scheduler, show func([]scheduler.CellStatus)) (stop func([]scheduler.CellStatus)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if cells, _, err := scheduler.Status(ctx, dir, sched); err == nil && ctx.Err() == nil {
					show(cells)
				}
			}
		}
	}()
	return func(final []scheduler.CellStatus) {
		cancel()
		<-done
		if final != nil {
			show(final)
		}
	}
}

// printLocalRun says how the cells the local executor ran ended, then the
// whole sweep when that is more.
func printLocalRun(w io.Writer, sweepID string, rep *scheduler.SubmitReport) {
	var ran []scheduler.CellStatus
	for _, c := range rep.Final {
		job, _, _ := strings.Cut(c.Task, "_")
		if slices.Contains(rep.JobIDs, job) {
			ran = append(ran, c)
		}
	}
	fmt.Fprintf(w, "local executor finished %d cells: %s\n", len(ran), scheduler.CountsLine(ran))
	if len(ran) < len(rep.Final) {
		fmt.Fprintf(w, "sweep %s: %d cells: %s\n", sweepID, len(rep.Final), scheduler.CountsLine(rep.Final))
	}
}

// Watch polls the sweep in dir until every submitted cell is terminal,
// showing progress, retrying infra failures under the spec's retry.infra
// and submitting the cells of a paced sweep that wait for room.
func (l *Lane) Watch(ctx context.Context, dir string) ([]scheduler.CellStatus, error) {
	_, sched, err := l.Open(dir)
	if err != nil {
		return nil, err
	}
	return scheduler.Watch(ctx, dir, sched, scheduler.FollowOptions{Interval: l.Interval, Show: l.show(),
		Retried: Retried(l.Stderr), Paced: Paced(l.Stderr), Submit: l.Submit.Opts})
}

// Paced says what a follower submitted of the cells that waited for room.
func Paced(w io.Writer) func(*scheduler.SubmitReport) {
	return func(rep *scheduler.SubmitReport) {
		fmt.Fprintf(w, "kvsweep: submitted %d more cells as room appeared in the queue", rep.Cells)
		if rep.Waiting > 0 {
			fmt.Fprintf(w, "; %d still wait (%s)", rep.Waiting, WaitReason(rep))
		}
		fmt.Fprintln(w)
	}
}

// Retried says what an automatic retry of infra failures submitted.
func Retried(w io.Writer) func([]scheduler.CellStatus, []string) {
	return func(cells []scheduler.CellStatus, exclude []string) {
		for _, c := range cells {
			fmt.Fprintf(w, "kvsweep: cell %s (%s) failed outside the test (%s on %s, attempt %d); submitting it again", c.Name, c.ID, c.State, cmp.Or(c.Nodes, "no node"), c.Attempt)
			if len(exclude) > 0 {
				fmt.Fprintf(w, " away from %s", strings.Join(exclude, ","))
			}
			fmt.Fprintln(w)
		}
	}
}
