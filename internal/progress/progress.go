// Package progress is how a long wait shows itself on a command's stderr:
// a live bar of the cells that ended, with the counts per state beside it,
// on a terminal; one line per change otherwise; nothing when asked to be
// quiet; and a count bar for reading many files.
package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Tally is where a wait stands: of Total cells submitted, Done ended;
// Line says it in words ("3 COMPLETED, 1 FAILED, 2 RUNNING").
type Tally struct {
	Total, Done int
	Line        string
}

// Wait returns the progress of a wait on w: nothing when quiet, a bar on
// a terminal, lines otherwise.
func Wait(w io.Writer, quiet bool) func(Tally) {
	switch {
	case quiet:
		return func(Tally) {}
	case IsTerminal(w):
		return bar(w)
	}
	return lines(w)
}

// IsTerminal says whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// lines prints the counts line whenever it changes.
func lines(w io.Writer) func(Tally) {
	last := ""
	return func(t Tally) {
		if t.Line != last {
			fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), t.Line)
			last = t.Line
		}
	}
}

// bar draws a bar of the submitted cells that ended, with the counts
// beside it. A wait that has already ended gets no bar: there is nothing
// to wait for. The finished bar stays on the screen.
func bar(w io.Writer) func(Tally) {
	var b *progressbar.ProgressBar
	finished := false
	return func(t Tally) {
		if finished || (b == nil && (t.Total == 0 || t.Done == t.Total)) {
			return
		}
		if b == nil {
			b = progressbar.NewOptions(t.Total, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetWidth(30), progressbar.OptionShowDescriptionAtLineEnd(),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
		}
		b.ChangeMax(t.Total)
		b.Describe(t.Line)
		_ = b.Set(t.Done)
		if t.Done == t.Total {
			finished = true
			_ = b.Finish()
		}
	}
}

// Count is a bar of done out of total for a terminal, cleared when done
// (the command prints its own summary after).
func Count(w io.Writer, what string) func(done, total int) {
	var b *progressbar.ProgressBar
	return func(done, total int) {
		if b == nil {
			b = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
				progressbar.OptionSetDescription(what), progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
		}
		_ = b.Set(done)
		if done == total {
			_ = b.Finish()
		}
	}
}
