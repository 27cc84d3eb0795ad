package live

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// Summary and Help are kvsweep watch's line in the command list and its
// help text.
const (
	Summary = "Follow running sweeps in a live terminal view; cancel or resubmit a cell"
	Help    = `A full-screen view of the sweeps in DIR... that redraws as they run:
every cell by state with the counts per state, the time since the first
submission and the time left at the pace so far; below, the selected
cell's log tail as it grows (its job output; l shows its other logs), its
GPUs' use from gpu.jsonl and its telemetry figures so far.

Keys: up/down (j/k), PgUp/PgDn (b/f), Home/End (g/G) select a cell;
c cancels the selected cell and r submits it again (a cell that ended
without success, or never ran), each asking first (y/n; any other key
answers no); q (or Esc, Ctrl-C) quits, leaving the sweeps as they are.

The states come from the scheduler as kvsweep status has them, polled
every --interval; on Slurm every view and follower of one user's sweeps
on one cluster shares one sacct and one squeue per interval
($KVSWEEP_POLL_CACHE). Cancel and resubmit act as kvsweep cancel --cells
and resubmit do. It needs no mouse and works over ssh. When stdout is not
a terminal it prints the table kvsweep status prints, once.`
)

// Options are kvsweep watch's flags.
type Options struct {
	Interval time.Duration
}

// Flags adds the view's flags to fs.
func Flags(fs *pflag.FlagSet) *Options {
	o := &Options{}
	fs.DurationVar(&o.Interval, "interval", 5*time.Second, "time between polls of the scheduler")
	return o
}

// Run shows the view of the sweeps in dirs, opened with l's scheduler
// configuration, until the user quits; on stdout that is not a
// terminal it prints the sweeps' status table once, as kvsweep status
// does.
func (o *Options) Run(l *lane.Lane, dirs []string) error {
	if len(dirs) == 0 {
		return fail.Usagef("expected the sweep directory (or several)")
	}
	if o.Interval <= 0 {
		return fail.Usagef("--interval must be positive, got %s", o.Interval)
	}
	if !isTerminal(l.Stdout) {
		return plain(l, dirs)
	}
	for _, dir := range dirs {
		if _, err := sweep.ReadManifest(dir); err != nil {
			return err
		}
	}
	src := newLaneSource(l, dirs, o.Interval)
	p := tea.NewProgram(NewModel(src, o.Interval), tea.WithAltScreen(), tea.WithOutput(l.Stdout))
	_, err := p.Run()
	return err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// plain prints the status of the sweeps as kvsweep status does: one
// table, or a table per sweep under its directory.
func plain(l *lane.Lane, dirs []string) error {
	out := lane.Statuses(dirs, func(dir string) ([]scheduler.CellStatus, error) {
		_, sc, err := l.Open(dir)
		if err != nil {
			return nil, err
		}
		cells, _, err := scheduler.Status(context.Background(), dir, sc)
		return cells, err
	})
	if len(dirs) == 1 && out[0].Err == nil {
		return scheduler.WriteStatus(l.Stdout, out[0].Cells, "table")
	}
	if err := scheduler.WriteStatuses(l.Stdout, out, "table"); err != nil {
		return err
	}
	failed := 0
	for _, s := range out {
		if s.Err != nil {
			failed++
			fmt.Fprintf(l.Stderr, "kvsweep: %s: %v\n", s.Dir, s.Err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("no status for %d of %d sweeps (said above)", failed, len(dirs))
	}
	return nil
}
