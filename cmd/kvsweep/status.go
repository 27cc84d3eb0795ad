package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kvsweep/kvsweep/sbatch"
)

func init() {
	register(&command{
		name:    "status",
		args:    "DIR",
		summary: "Show the state of every cell of a sweep",
		help: `One sacct call for the whole sweep, and one squeue call for pending reasons
and for jobs Slurm still holds where accounting is off; a cell Slurm no
longer knows is read from its exit marker. --watch polls until every
submitted cell is terminal: a progress bar on a terminal, a line per change
otherwise.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			so := schedFlags(fs)
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
				_, sched, err := so.open(e, dir)
				if err != nil {
					return err
				}
				if *watch {
					if err := watchSweep(e, dir, sched, *interval); err != nil {
						return err
					}
				}
				cells, _, err := sbatch.Status(context.Background(), dir, sched)
				if err != nil {
					return err
				}
				return sbatch.WriteStatus(e.stdout, cells, *format)
			}
		},
	})
	register(&command{
		name:    "cancel",
		args:    "DIR [--cells ID,...]",
		summary: "Cancel a sweep's jobs, or some of its cells",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			so := schedFlags(fs)
			only := fs.StringSlice("cells", nil, "cancel only these cells (ids)")
			return func(e *env, args []string) error {
				dir, err := oneArg(args, "the sweep directory")
				if err != nil {
					return err
				}
				_, sched, err := so.open(e, dir)
				if err != nil {
					return err
				}
				cells, _, err := sbatch.Status(context.Background(), dir, sched)
				if err != nil {
					return err
				}
				want := map[string]bool{}
				for _, id := range *only {
					want[id] = true
				}
				var targets []string
				for _, c := range cells {
					if c.Task == "" || sbatch.Terminal(c.State) || (len(want) > 0 && !want[c.ID]) {
						continue
					}
					targets = append(targets, c.Task)
					delete(want, c.ID)
				}
				for id := range want {
					return usagef("cell %q is not a live cell of this sweep", id)
				}
				if err := sched.Cancel(context.Background(), targets); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "cancelled %d tasks\n", len(targets))
				return nil
			}
		},
	})
}

// watchSweep polls until every submitted cell is terminal.
func watchSweep(e *env, dir string, sched sbatch.Scheduler, interval time.Duration) error {
	ctx, stop := interruptible()
	defer stop()
	var bar *progressbar.ProgressBar
	if f, ok := e.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(e.stderr), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(false), progressbar.OptionClearOnFinish())
	}
	last := ""
	for {
		cells, _, err := sbatch.Status(ctx, dir, sched)
		if err != nil {
			return err
		}
		line := sbatch.CountsLine(cells)
		if bar != nil {
			done := 0
			for _, c := range cells {
				if sbatch.Terminal(c.State) {
					done++
				}
			}
			bar.ChangeMax(len(cells))
			_ = bar.Set(done)
			bar.Describe(line)
		} else if line != last {
			fmt.Fprintf(e.stderr, "%s %s\n", time.Now().Format("15:04:05"), line)
			last = line
		}
		if sbatch.Done(cells) {
			if bar != nil {
				_ = bar.Finish()
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted")
		case <-time.After(interval):
		}
	}
}
