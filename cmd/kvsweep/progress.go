package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
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

// followLocal shows the progress of the local executor while it runs the
// sweep in dir, from the sweep's records once a second, until stop. The
// last call shows the final states.
func followLocal(e *env, dir string, sched scheduler.Scheduler, show func([]scheduler.CellStatus)) (stop func([]scheduler.CellStatus)) {
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

// prefixed writes whole lines to w, each after "[PREFIX] ": for what
// runs at once (the probes of a bisect round, the sweeps of one status).
func prefixed(w io.Writer, prefix string) io.Writer {
	return &prefixWriter{w: w, prefix: "[" + prefix + "] "}
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

var writeMu sync.Mutex // one line at a time onto the terminal

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		writeMu.Lock()
		_, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		writeMu.Unlock()
		p.buf = p.buf[i+1:]
		if err != nil {
			return len(b), err
		}
	}
}
