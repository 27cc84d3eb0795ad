package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/history/bolt"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(storeCmd) }

var storeCmd = &command{
	name:    "store",
	args:    "copy|migrate|push|forget [flags] ...",
	summary: "Copy, migrate, fill and prune the history store",
	help: `  kvsweep store copy backups/history-$(date +%F).db
  kvsweep store copy ~/.local/share/kvsweep/history.db postgres://kvsweep@db.example.com/kvsweep
  kvsweep store migrate --store postgres://kvsweep@db.example.com/kvsweep
  kvsweep store push sweeps/nightly-1
  kvsweep store forget nightly-20261203-1a2b --reason "n3 was throttled: every figure is wrong"

Run 'kvsweep help store SUBCOMMAND' for each one's flags.`,
	subs: []*command{storeCopyCmd, storeMigrateCmd, storePushCmd, storeForgetCmd},
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

var storeForgetCmd = &command{
	name:    "forget",
	args:    "--reason TEXT [--store STORE] RUN...",
	summary: "Remove runs from the history store, recording who, when and why",
	help: `Removes the stored runs RUN... (sweep ids, as report --history lists
them) from the history store, a bbolt file or a postgres:// URL: a run
collected on a bad node, or from a broken image, that would otherwise be a
baseline and a point on every chart. Each removal is recorded with the run's
spec, ref, date and cells, who removed it (--author, else git's user.name,
else $USER), when, and --reason, which is required; report --history lists
the removals under its table, so a run is never missing without a trace.
The sweep's notes stay, and storing the run again (kvsweep store push)
brings it back. A RUN the store does not hold is refused and nothing is
removed.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		store := fs.String("store", history.DefaultStorePath(), "history store: a bbolt file, or postgres://USER@HOST/DB")
		reason := fs.String("reason", "", "why the runs go (required): the history shows it")
		author := fs.String("author", "", "who removes them (default: git's user.name, else $USER)")
		return func(e *env, args []string) error {
			if len(args) == 0 {
				return usagef("expected one or more stored runs (sweep ids; kvsweep report --history lists them)")
			}
			if *author == "" {
				*author = defaultAuthor()
			}
			rm := history.Removal{By: *author, At: time.Now().UTC(), Reason: *reason}
			if rm.Sweep = args[0]; rm.Check() != nil {
				return usagef("%v", rm.Check())
			}
			h := history.OpenLazy(*store, false)
			defer h.Close()
			if h.Missing() {
				return usagef("history store %s does not exist: there is nothing to forget", *store)
			}
			done, err := history.Forget(h, args, rm)
			for _, r := range done {
				fmt.Fprintf(e.stdout, "store %s: %s\n", h, r)
			}
			return err
		}
	},
}
