package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kvsweep/kvsweep/scheduler"
)

func init() { register(statusCmd, cancelCmd) }

var statusCmd = &command{
	name:    "status",
	args:    "DIR",
	summary: "Show the state of every cell of a sweep",
	help: `One sacct call for the whole sweep, and one squeue call for pending reasons
and for jobs Slurm still holds where accounting is off; a cell Slurm no
longer knows is read from its exit marker. --watch polls until every
submitted cell is terminal: a progress bar on a terminal, a line per change
otherwise.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		cfg := schedFlags(fs)
		format := fs.String("format", "table", "table, markdown or json")
		watch := fs.Bool("watch", false, "poll until every submitted cell is terminal")
		interval := fs.Duration("interval", 10*time.Second, "time between polls with --watch")
		return func(e *env, args []string) error {
			dir, err := oneArg(args, "the sweep directory")
			if err != nil {
				return err
			}
			if err := oneOf("format", *format, "table", "markdown", "json"); err != nil {
				return err
			}
			cells, err := status(e, dir, cfg)
			if *watch && err == nil {
				cells, err = watchSweep(e, dir, cfg, *interval)
			}
			if err != nil {
				return err
			}
			return scheduler.WriteStatus(e.stdout, cells, *format)
		}
	},
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
func watchSweep(e *env, dir string, cfg *scheduler.Config, interval time.Duration) ([]scheduler.CellStatus, error) {
	_, sched, err := openSweep(e, dir, cfg)
	if err != nil {
		return nil, err
	}
	ctx, stop := interruptible()
	defer stop()
	show := lineProgress(e)
	if f, ok := e.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		show = barProgress(e)
	}
	return scheduler.Watch(ctx, dir, sched, scheduler.FollowOptions{Interval: interval, Show: show, Retried: retried(e)})
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

// lineProgress prints the counts line whenever it changes.
func lineProgress(e *env) func([]scheduler.CellStatus) {
	last := ""
	return func(cells []scheduler.CellStatus) {
		if line := scheduler.CountsLine(cells); line != last {
			fmt.Fprintf(e.stderr, "%s %s\n", time.Now().Format("15:04:05"), line)
			last = line
		}
	}
}

// barProgress draws a progress bar of terminal cells with the counts.
func barProgress(e *env) func([]scheduler.CellStatus) {
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(e.stderr), progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false), progressbar.OptionClearOnFinish())
	return func(cells []scheduler.CellStatus) {
		done := 0
		for _, c := range cells {
			if scheduler.Terminal(c.State) {
				done++
			}
		}
		bar.ChangeMax(len(cells))
		_ = bar.Set(done)
		bar.Describe(scheduler.CountsLine(cells))
		if scheduler.Done(cells) {
			_ = bar.Finish()
		}
	}
}
