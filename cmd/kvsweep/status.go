package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
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
		cfg := querySchedFlags(fs)
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
	lane.SaidWaiting(e.stderr, dir, cells, w.on)
	lane.RemoveLeftovers(e.stderr, dir, lane.EndedIn(cells))
	return cells, nil
}

var cancelCmd = &command{
	name:    "cancel",
	args:    "DIR [--cells ID,...]",
	summary: "Cancel a sweep's jobs, or some of its cells",
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		cfg := querySchedFlags(fs)
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
				lane.RemoveLeftovers(e.stderr, dir, lane.EndedIn(cells))
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
	l := schedLane(e, cfg, "")
	l.Interval, l.Submit.Quiet, l.Submit.Opts = interval, quiet, so
	ctx, stop := interruptible()
	defer stop()
	return l.Watch(ctx, dir)
}
