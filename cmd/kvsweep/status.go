package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

func init() { register(statusCmd, cancelCmd) }

var statusCmd = &command{
	name:    "status",
	args:    "DIR...",
	summary: "Show the state of every cell of a sweep (or of several)",
	help: `One sacct call for the whole sweep, and one squeue call for pending reasons
and for jobs Slurm still holds where accounting is off; a cell Slurm no
longer knows is read from its exit marker. --watch polls until every
submitted cell is terminal: a progress bar on a terminal, a line per change
otherwise; in a sweep larger than the queue has room for, it submits the
cells that wait as room appears, and ends when they are done too. The
followers of one user's sweeps on one cluster (status --watch, run --wait,
ci) share their polls: one sacct and one squeue per interval for all of
them ($KVSWEEP_POLL_CACHE names where, or "off"). Containers that killed
docker tasks of ended cells left are removed (as by cancel and collect),
and said so on stderr.

Several directories are followed at once, by one process: a table per
sweep (a heading naming it), JSON as a list of {dir, cells, counts}, and
the progress lines on stderr prefixed with the directory. A sweep that
cannot be read is said and does not stop the others; the exit status is
then 1.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		cfg := schedFlags(fs)
		format := fs.String("format", "table", "table, markdown or json")
		watch := fs.Bool("watch", false, "poll until every submitted cell is terminal")
		interval := fs.Duration("interval", 10*time.Second, "time between polls with --watch")
		quiet := quietFlag(fs)
		return func(e *env, args []string) error {
			if len(args) == 0 {
				return usagef("expected the sweep directory (or several)")
			}
			if err := oneOf("format", *format, "table", "markdown", "json"); err != nil {
				return err
			}
			w := watching{on: *watch, interval: *interval, quiet: *quiet}
			if len(args) > 1 {
				return statusMany(e, args, cfg, w, *format)
			}
			cells, err := statusOne(e, args[0], cfg, w)
			if err != nil {
				return err
			}
			return scheduler.WriteStatus(e.stdout, cells, *format)
		}
	},
}

// watching is how status follows: once, or until the cells are terminal.
type watching struct {
	on       bool
	interval time.Duration
	quiet    bool
}

// statusOne is the status of the sweep in dir, polled once or watched,
// with what it says beside the table: cells waiting for room, leftover
// containers removed.
func statusOne(e *env, dir string, cfg *scheduler.Config, w watching) ([]scheduler.CellStatus, error) {
	var cells []scheduler.CellStatus
	var err error
	if w.on {
		cells, err = watchSweep(e, dir, cfg, w.interval, w.quiet, scheduler.SubmitOptions{})
	} else {
		cells, err = status(e, dir, cfg)
	}
	if err != nil {
		return nil, err
	}
	saidWaiting(e, dir, cells, w.on)
	removeLeftovers(e, dir, endedIn(cells))
	return cells, nil
}

var cancelCmd = &command{
	name:    "cancel",
	args:    "DIR [--cells ID,...]",
	summary: "Cancel a sweep's jobs, or some of its cells",
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		cfg := schedFlags(fs)
		only := fs.StringSlice("cells", nil, "cancel only these cells (ids)")
		return func(e *env, args []string) error {
			dir, err := oneArg(args, "the sweep directory")
			if err != nil {
				return err
			}
			_, sched, err := openSweep(e, dir, cfg)
			if err != nil {
				return err
			}
			n, err := scheduler.Cancel(context.Background(), dir, sched, *only)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "cancelled %d tasks\n", n)
			if cells, err := status(e, dir, cfg); err == nil {
				removeLeftovers(e, dir, endedIn(cells))
			}
			return nil
		}
	},
}

// status is one status poll of the sweep in dir.
func status(e *env, dir string, cfg *scheduler.Config) ([]scheduler.CellStatus, error) {
	_, sched, err := openSweep(e, dir, cfg)
	if err != nil {
		return nil, err
	}
	cells, _, err := scheduler.Status(context.Background(), dir, sched)
	return cells, err
}

// watchSweep polls until every submitted cell is terminal, showing
// progress: a bar on a terminal, a line per change otherwise.
// so is what submits the cells of a paced sweep that wait for room.
func watchSweep(e *env, dir string, cfg *scheduler.Config, interval time.Duration, quiet bool, so scheduler.SubmitOptions) ([]scheduler.CellStatus, error) {
	_, sched, err := openSweep(e, dir, cfg)
	if err != nil {
		return nil, err
	}
	ctx, stop := interruptible()
	defer stop()
	return scheduler.Watch(ctx, dir, sched, scheduler.FollowOptions{Interval: interval, Show: progress(e, quiet), Retried: retried(e),
		Paced: paced(e), Submit: so})
}

// paced says what a follower submitted of the cells that waited for room.
func paced(e *env) func(*scheduler.SubmitReport) {
	return func(rep *scheduler.SubmitReport) {
		fmt.Fprintf(e.stderr, "kvsweep: submitted %d more cells as room appeared in the queue", rep.Cells)
		if rep.Waiting > 0 {
			fmt.Fprintf(e.stderr, "; %d still wait (%s)", rep.Waiting, waitReason(rep))
		}
		fmt.Fprintln(e.stderr)
	}
}

// saidWaiting says how many cells of a paced sweep wait for room.
func saidWaiting(e *env, dir string, cells []scheduler.CellStatus, watched bool) {
	n := scheduler.Counts(cells)[scheduler.StateNotSubmitted]
	if recs, err := sweep.ReadJournal(dir); n == 0 || err != nil || !sweep.Paced(recs) {
		return
	}
	if watched {
		fmt.Fprintf(e.stderr, "kvsweep: %d cells still wait for room in the queue\n", n)
		return
	}
	fmt.Fprintf(e.stderr, "kvsweep: %d cells wait for room in the queue: kvsweep status %s --watch (or submit again) submits them as room appears\n", n, dir)
}

// retried says what an automatic retry of infra failures submitted.
func retried(e *env) func([]scheduler.CellStatus, []string) {
	return func(cells []scheduler.CellStatus, exclude []string) {
		for _, c := range cells {
			fmt.Fprintf(e.stderr, "kvsweep: cell %s (%s) failed outside the test (%s on %s, attempt %d); submitting it again", c.Name, c.ID, c.State, cmp.Or(c.Nodes, "no node"), c.Attempt)
			if len(exclude) > 0 {
				fmt.Fprintf(e.stderr, " away from %s", strings.Join(exclude, ","))
			}
			fmt.Fprintln(e.stderr)
		}
	}
}
