package lane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// MaxTailBytes bounds what is read from the end of one log.
const MaxTailBytes = 1 << 20

// WriteLogTails prints the last n lines of each log of a cell.
func WriteLogTails(w io.Writer, dir, cellID string, n int) {
	files := sweep.LogFiles(dir, cellID)
	if len(files) == 0 {
		fmt.Fprintf(w, "(cell %s has written no log yet)\n", cellID)
	}
	for _, f := range files {
		tail, _, err := sweep.Tail(dir, f, n, MaxTailBytes)
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

// FollowLog prints the tail (n lines) of the cell's job output, then what
// it gains every Interval, until the scheduler says the cell ended.
func (l *Lane) FollowLog(ctx context.Context, dir, cellID string, n int) error {
	_, sched, err := l.Open(dir)
	if err != nil {
		return err
	}
	lf := &logFollower{dir: dir, cellID: cellID, n: n, out: l.Stdout}
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
			fmt.Fprintf(l.Stderr, "kvsweep logs: cell %s is %s\n", cellID, state)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(l.Interval):
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
		tail, offset, err := sweep.Tail(lf.dir, lf.file, lf.n, MaxTailBytes)
		if err != nil {
			return err
		}
		lf.offset = offset
		fmt.Fprint(lf.out, tail)
		return nil
	}
	b, next, err := sweep.ReadFrom(lf.dir, lf.file, lf.offset, MaxTailBytes)
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
		b, _, _ := sweep.ReadFrom(lf.dir, lf.file, lf.offset, MaxTailBytes)
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
