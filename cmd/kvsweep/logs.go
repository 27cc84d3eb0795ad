package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

func init() { register(logsCmd) }

// maxTailBytes bounds what is read from the end of one log.
const maxTailBytes = 1 << 20

var logsCmd = &command{
	name:    "logs",
	args:    "DIR CELL [-f]",
	summary: "Show the tails of a cell's logs: job output, services, agent",
	help: `CELL is a cell id or name. Prints the last --lines lines of each log the
cell's job wrote (its output, etcd, services/*.log, remote/*.log), as
kvsweep ci does for failing cells. With -f it then follows the job's
output until the cell ends (or Ctrl-C).`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		cfg := schedFlags(fs)
		lines := fs.IntP("lines", "n", 40, "lines of each log")
		follow := fs.BoolP("follow", "f", false, "follow the job's output until the cell ends")
		interval := fs.Duration("interval", time.Second, "with -f: time between reads")
		return func(e *env, args []string) error {
			if len(args) != 2 {
				return usagef("expected the sweep directory and a cell, got %d arguments", len(args))
			}
			dir := args[0]
			m, err := sweep.ReadManifest(dir)
			if err != nil {
				return err
			}
			var id string
			for _, c := range m.Cells {
				if c.ID == args[1] || c.Name == args[1] {
					id = c.ID
				}
			}
			if id == "" {
				return usagef("%q is neither the id nor the name of a cell of sweep %s", args[1], m.SweepID)
			}
			if !*follow {
				writeLogTails(e.stdout, dir, id, *lines)
				return nil
			}
			return followLog(e, dir, id, cfg, *lines, *interval)
		}
	},
}

// writeLogTails prints the last n lines of each log of a cell.
func writeLogTails(w io.Writer, dir, cellID string, n int) {
	files := sweep.LogFiles(dir, cellID)
	if len(files) == 0 {
		fmt.Fprintf(w, "(cell %s has written no log yet)\n", cellID)
	}
	for _, f := range files {
		tail, _, err := sweep.Tail(dir, f, n, maxTailBytes)
		if err != nil {
			fmt.Fprintf(w, "==> %s: %v <==\n", f, err)
			continue
		}
		fmt.Fprintf(w, "==> %s (last %d lines) <==\n%s", f, n, tail)
		if tail != "" && tail[len(tail)-1] != '\n' {
			fmt.Fprintln(w)
		}
	}
}

// followLog prints the tail of the cell's job output, then what it gains,
// until the scheduler says the cell ended.
func followLog(e *env, dir, cellID string, cfg *scheduler.Config, n int, interval time.Duration) error {
	_, sched, err := openSweep(e, dir, cfg)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	lf := &logFollower{dir: dir, cellID: cellID, n: n, out: e.stdout}
	for {
		if err := lf.step(); err != nil {
			return err
		}
		state, err := cellState(ctx, dir, sched, cellID)
		if err != nil {
			return err
		}
		if scheduler.Terminal(state) || state == scheduler.StateNotSubmitted {
			lf.rest()
			fmt.Fprintf(e.stderr, "kvsweep logs: cell %s is %s\n", cellID, state)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// logFollower prints a cell's log as it grows: its last n lines once the
// log exists, then what was added since.
type logFollower struct {
	dir, cellID, file string
	n                 int
	offset            int64
	out               io.Writer
}

// step prints the tail once the log appears, then what was added.
func (lf *logFollower) step() error {
	if lf.file == "" {
		for _, f := range sweep.LogFiles(lf.dir, lf.cellID) {
			lf.file = f // the job output sorts first
			break
		}
		if lf.file == "" {
			return nil
		}
		tail, offset, err := sweep.Tail(lf.dir, lf.file, lf.n, maxTailBytes)
		if err != nil {
			return err
		}
		lf.offset = offset
		fmt.Fprint(lf.out, tail)
		return nil
	}
	b, next, err := sweep.ReadFrom(lf.dir, lf.file, lf.offset, maxTailBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	lf.out.Write(b)
	lf.offset = next
	return nil
}

// rest prints what the log gained last, once the cell has ended.
func (lf *logFollower) rest() {
	if lf.file != "" {
		b, _, _ := sweep.ReadFrom(lf.dir, lf.file, lf.offset, maxTailBytes)
		lf.out.Write(b)
	}
}

// cellState is the cell's state now ("" if the sweep has no such cell).
func cellState(ctx context.Context, dir string, sched scheduler.Scheduler, cellID string) (string, error) {
	cells, _, err := scheduler.Status(ctx, dir, sched)
	if err != nil {
		return "", err
	}
	for _, c := range cells {
		if c.ID == cellID {
			return c.State, nil
		}
	}
	return "", nil
}
