package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/history/bolt"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(storeCmd) }

var storeCmd = &command{
	name:    "store",
	args:    "copy|migrate|push [flags] ...",
	summary: "Copy, migrate and fill the history store",
	help: `  kvsweep store copy backups/history-$(date +%F).db
  kvsweep store copy ~/.local/share/kvsweep/history.db postgres://kvsweep@db.example.com/kvsweep
  kvsweep store migrate --store postgres://kvsweep@db.example.com/kvsweep
  kvsweep store push sweeps/nightly-1

Run 'kvsweep help store SUBCOMMAND' for each one's flags.`,
	subs: []*command{storeCopyCmd, storeMigrateCmd, storePushCmd},
}

var storeCopyCmd = &command{
	name:    "copy",
	args:    "[--store PATH] DEST | SRC DEST",
	summary: "Copy a history store: a backup file, or runs and notes between stores",
	help: `With one argument, writes the history store (--store, a bbolt file) to
DEST, a new file, as one consistent snapshot, while other kvsweeps may be
collecting into it; the copy is checked by opening it again. Keep such
copies: a store that is damaged (a copy cut short, a full disk) is refused
by every command with what is wrong, and restoring the last good copy is
how it is recovered.

With two, copies every run and note of the store SRC into the store DEST,
each a bbolt file or a postgres:// URL (DEST is created if need be): to
move a history from one machine's file to the team's database, or back.
It is idempotent (a run DEST holds the same is not written again, a note
it has is not added twice; runs only DEST has are kept) and verified: each
run read back from DEST has the source's content hash, and its notes.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		store := fs.String("store", history.DefaultStorePath(), "history store to copy (with one argument)")
		return func(e *env, args []string) error {
			switch len(args) {
			case 1:
				if history.IsURL(*store) || history.IsURL(args[0]) {
					return copyStores(e, *store, args[0])
				}
				if err := bolt.CopyFile(*store, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "copied history store %s to %s\n", *store, args[0])
				return nil
			case 2:
				return copyStores(e, args[0], args[1])
			}
			return usagef("expected DEST or SRC DEST, got %d arguments", len(args))
		}
	},
}

func copyStores(e *env, src, dst string) error {
	c, err := history.Copy(src, dst)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "copied %d runs from %s to %s: %d written, %d already there; %d notes added; every run verified by its content hash\n",
		c.Runs, history.Redact(src), history.Redact(dst), c.Written, c.Same, c.Notes)
	return nil
}

var storeMigrateCmd = &command{
	name:    "migrate",
	args:    "[--store URL]",
	summary: "Bring a database's history schema to this kvsweep's version",
	help: `Creates kvsweep's tables and views in the database (an empty one needs no
migrate: the first collect creates them) or brings an older schema to this
kvsweep's version, each step in one transaction, under a lock that lets
one kvsweep migrate at a time. kvsweeps older than the schema refuse the
store afterwards, and say so: upgrade the team's kvsweeps first. A
database newer than this kvsweep is refused. The bbolt file needs no
migration.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		store := fs.String("store", history.DefaultStorePath(), "history store: a postgres:// URL")
		return func(e *env, args []string) error {
			if len(args) != 0 {
				return usagef("expected no arguments, got %d", len(args))
			}
			if !history.IsURL(*store) {
				fmt.Fprintf(e.stdout, "history store %s is a bbolt file: it needs no migration\n", *store)
				return nil
			}
			msg, err := migrateStore(*store)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, msg)
			return nil
		}
	},
}

var storePushCmd = &command{
	name:    "push",
	args:    "[--store STORE] DIR...",
	summary: "Store collected sweeps' results.json in the history store",
	help: `Stores the run in each sweep directory's results.json (written by kvsweep
collect) in the history store, replacing an earlier run of the sweep and
keeping its notes: how a collect whose store could not be reached is
finished once it can be, without asking the scheduler again.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		store := fs.String("store", history.DefaultStorePath(), "history store: a bbolt file, or postgres://USER@HOST/DB")
		return func(e *env, args []string) error {
			if len(args) == 0 {
				return usagef("expected one or more sweep directories")
			}
			st, err := history.Open(*store, false)
			if err != nil {
				return err
			}
			defer st.Close()
			for _, dir := range args {
				run, err := testrun.ReadRun(dir)
				if err != nil {
					return err
				}
				if err := st.Put(run); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "stored run %s (%d cells: %s) in %s\n", run.ID, len(run.Cells), run.CountsLine(), st)
			}
			return nil
		}
	},
}
