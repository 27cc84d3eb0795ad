package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(noteCmd) }

var noteCmd = &command{
	name:    "note",
	args:    "SWEEP [CELL] TEXT",
	summary: "Keep a finding of the test plan with the run that found it",
	help: `Stores TEXT in the history store with the run of SWEEP (a sweep directory
or a stored sweep id) and, when CELL is given (its id or name), that cell,
with the author and the time. Notes survive collecting the sweep again, and
report --history shows them next to their run in every format: the test
plan's findings and workarounds live with the runs that found them.

  kvsweep note sweeps/phase1-20261203 "Guard promotion takes 9 s on kvsn2: drain it"
  kvsweep note phase1-20261203 vllm-aggregated-qwen3.5-4b "TC-06 flaky under load"

The author is --author, else git's user.name, else $USER.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		store := fs.String("store", history.DefaultStorePath(), "history store")
		author := fs.String("author", "", "who found it (default: git's user.name, else $USER)")
		return func(e *env, args []string) error {
			var sel, cell, text string
			switch len(args) {
			case 2:
				sel, text = args[0], args[1]
			case 3:
				sel, cell, text = args[0], args[1], args[2]
			default:
				return usagef("expected SWEEP [CELL] TEXT, got %d arguments", len(args))
			}
			if *author == "" {
				*author = defaultAuthor()
			}
			h := history.OpenLazy(*store, false)
			defer h.Close()
			n, err := history.Annotate(h, sel, testrun.Note{Cell: cell, Author: *author, Time: time.Now().UTC(), Text: text})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "noted on sweep %s: %s\n", n.Sweep, n)
			return nil
		}
	},
}

// defaultAuthor is git's user.name, else $USER.
func defaultAuthor() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "git", "config", "--get", "user.name").Output(); err == nil {
		if name := strings.TrimSpace(string(out)); name != "" {
			return name
		}
	}
	return os.Getenv("USER")
}
