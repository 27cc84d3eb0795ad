package main

import (
	"fmt"

	"github.com/kvsweep/kvsweep/testrun"
	"github.com/spf13/pflag"
)

func init() { register(storeCmd) }

var storeCmd = &command{
	name:    "store",
	args:    "copy [flags] DEST",
	summary: "Copy the history store",
	help: `  kvsweep store copy backups/history-$(date +%F).db

Run 'kvsweep help store SUBCOMMAND' for each one's flags.`,
	subs: []*command{storeCopyCmd},
}

var storeCopyCmd = &command{
	name:    "copy",
	args:    "[--store PATH] DEST",
	summary: "Write a consistent copy of the history store to a new file",
	help: `Writes the history store (runs and notes) to DEST, a new file, as one
consistent snapshot, while other kvsweeps may be collecting into it; the
copy is checked by opening it again. Keep such copies: a store that is
damaged (a copy cut short, a full disk) is refused by every command with
what is wrong, and restoring the last good copy is how it is recovered.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		store := fs.String("store", testrun.DefaultStorePath(), "history store to copy")
		return func(e *env, args []string) error {
			if len(args) != 1 {
				return usagef("expected DEST, got %d arguments", len(args))
			}
			if err := testrun.CopyStore(*store, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "copied history store %s to %s\n", *store, args[0])
			return nil
		}
	},
}
