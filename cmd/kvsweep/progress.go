package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kvsweep/kvsweep/scheduler"
)

// quietFlag is --quiet of the commands that wait: no progress at all.
func quietFlag(fs *pflag.FlagSet) *bool {
	return fs.BoolP("quiet", "q", false, "show no progress while waiting")
}

// progress is how a long wait shows itself on stderr: a live bar with the
// per-state counts on a terminal, one line per change otherwise, nothing
// with --quiet.
func progress(e *env, quiet bool) func([]scheduler.CellStatus) {
	switch {
	case quiet:
		return func([]scheduler.CellStatus) {}
	case isTerminal(e.stderr):
		return barProgress(e)
	}
	return lineProgress(e)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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

// barProgress draws a bar of the submitted cells that ended, with the
// counts beside it. A sweep that has already ended gets no bar: there is
// nothing to wait for. The finished bar stays on the screen.
func barProgress(e *env) func([]scheduler.CellStatus) {
	var bar *progressbar.ProgressBar
	finished := false
	return func(cells []scheduler.CellStatus) {
		total, done := 0, 0
		for _, c := range cells {
			if c.State != scheduler.StateNotSubmitted {
				total++
				if scheduler.Terminal(c.State) {
					done++
				}
			}
		}
		if finished || (bar == nil && (total == 0 || done == total)) {
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(e.stderr), progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetWidth(30), progressbar.OptionShowDescriptionAtLineEnd(),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(e.stderr) }))
		}
		bar.ChangeMax(total)
		bar.Describe(scheduler.CountsLine(cells))
		_ = bar.Set(done)
		if done == total {
			finished = true
			_ = bar.Finish()
		}
	}
}

// countBar is a bar of done out of total for a terminal, cleared when
// done: collect prints its own summary.
func countBar(e *env, what string) func(done, total int) {
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(e.stderr), progressbar.OptionShowCount(),
				progressbar.OptionSetDescription(what), progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
		}
		_ = bar.Set(done)
		if done == total {
			_ = bar.Finish()
		}
	}
}
