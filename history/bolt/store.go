// Package bolt is the history store in an embedded bbolt file: one file,
// no server, for one person on one machine. Importing it makes
// history.Open open plain paths with it.
package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// Store is the run history: an embedded bbolt database (one file, no
// server). Each Put is one transaction, so a run is stored whole or not at
// all, and a crash never leaves a torn file. Processes take turns through
// the file lock: a second collect waits (up to Timeout) for the first to
// finish, and both runs are kept. A run is keyed by its sweep id, so
// collecting a sweep again replaces its run.
type Store struct {
	db   *bbolt.DB
	path string
}

var runsBucket = []byte("runs")

var _ history.History = (*Store)(nil)

// Importing the package makes history.Open open plain paths (a bbolt
// file).
func init() {
	history.RegisterBackend(func(loc string, readOnly bool) (history.History, error) {
		st, err := Open(loc, readOnly)
		if err != nil {
			return nil, err // no typed nil in the interface
		}
		return st, nil
	}, "")
}

// Open opens (creating) the store at path. readOnly opens share the
// file with other readers. A file there that is no history store, or one
// damaged (cut short, overwritten), is refused with what is wrong and how
// to recover, and left as it is.
func Open(path string, readOnly bool) (*Store, error) {
	if !readOnly {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("history store %s: %w (collect a sweep first)", path, err)
	}
	if err := checkStoreFile(path, readOnly); err != nil {
		return nil, err
	}
	s := &Store{path: path}
	err := s.guard(func() (err error) {
		s.db, err = bbolt.Open(path, 0o644, &bbolt.Options{Timeout: storeLockTimeout, ReadOnly: readOnly})
		return err
	})
	if s.db == nil && err != nil {
		// An open that failed half-way (a damaged page) may leave the
		// file and its lock with no database to close: collected, the
		// file is closed and the lock released.
		runtime.GC()
	}
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("history store %s: still locked by another kvsweep after %v", path, storeLockTimeout)
		}
		var d *DamagedStoreError
		if errors.As(err, &d) {
			return nil, err
		}
		return nil, fmt.Errorf("history store %s: %w", path, err)
	}
	if !readOnly {
		if err := s.update(func(tx *bbolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists(runsBucket); err != nil {
				return err
			}
			return ensureIndex(tx)
		}); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	return s, nil
}

// storeLockTimeout is how long an open waits for another kvsweep's lock.
var storeLockTimeout = 2 * time.Minute

// guard runs f, which reads or writes the store's file through the
// database code, and turns a fault on its mapping or a panic on a damaged
// page into a DamagedStoreError: a damaged store is an error, never a
// crash. The database rolls back the transaction f was in.
func (s *Store) guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedStoreError{Path: s.path, Problem: fmt.Sprintf("is damaged (%v)", r)}
		}
	}()
	return f()
}

// view and update are the database's transactions, guarded.
func (s *Store) view(f func(*bbolt.Tx) error) error {
	return s.guard(func() error { return s.db.View(f) })
}

func (s *Store) update(f func(*bbolt.Tx) error) error {
	return s.guard(func() error { return s.db.Update(f) })
}

// Close releases the file.
func (s *Store) Close() error { return s.db.Close() }

// Put stores run, replacing an earlier run of the same sweep.
func (s *Store) Put(run *testrun.Run) error {
	b, err := testrun.EncodeRun(run)
	if err != nil {
		return err
	}
	return s.put(run, b)
}

// PutEncoded stores a run encoded by EncodeRun (results.json's bytes).
func (s *Store) PutEncoded(run *testrun.Run, doc []byte) error {
	return s.put(run, bytes.TrimSuffix(doc, []byte("\n")))
}

// String is the store's path.
func (s *Store) String() string { return s.path }

// put stores a run as encoded (json.Marshal's bytes, without notes), and
// its index entries, in one transaction.
func (s *Store) put(run *testrun.Run, b []byte) error {
	return s.update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(runsBucket).Put([]byte(run.ID), b); err != nil {
			return err
		}
		return reindex(tx, run.ID, run)
	})
}

// Get returns the run of a sweep id, or nil.
func (s *Store) Get(id string) (*testrun.Run, error) {
	var run *testrun.Run
	err := s.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(runsBucket)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(id))
		if v == nil {
			return nil
		}
		// v is the database's until the transaction ends: decoded from
		// a copy (the fast decoder may keep parts of its input).
		var err error
		if run, err = testrun.DecodeRun(bytes.Clone(v)); err != nil {
			return err
		}
		notes, err := notesOf(tx, id)
		run.Notes = notes
		return err
	})
	return run, err
}

// Runs returns every stored run, oldest first (by start, then collection).
func (s *Store) Runs() ([]*testrun.Run, error) {
	var runs []*testrun.Run
	err := s.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(runsBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			r, err := testrun.DecodeRun(bytes.Clone(v))
			if err != nil {
				return fmt.Errorf("run %s: %w", k, err)
			}
			r.Notes, err = notesOf(tx, r.ID)
			runs = append(runs, r)
			return err
		})
	})
	testrun.SortRuns(runs)
	return runs, err
}

// CopyFile writes a consistent copy of the store at src to dst, a new
// file (an existing one is refused, never replaced), while other kvsweeps
// may read and write src: the last good copy to restore a damaged store
// from. The copy is written under a temporary name, synced, renamed, and
// opened again to check it before CopyFile returns.
func CopyFile(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%s already exists: kvsweep store copy writes a new file, it never replaces one", dst)
	}
	st, err := Open(src, true)
	if err != nil {
		return err
	}
	defer st.Close()
	err = sweep.WriteAtomic(dst, 0o644, func(w io.Writer) error {
		return st.view(func(tx *bbolt.Tx) error {
			_, err := tx.WriteTo(w)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("copying history store %s to %s: %w", src, dst, err)
	}
	cp, err := Open(dst, true)
	if err != nil {
		return err
	}
	defer cp.Close()
	_, err = cp.Runs()
	return err
}

// Query returns the runs q selects, oldest first: those the index names,
// decoded and held to q (history.Apply). A store without the index (one
// written before it, opened read-only) is read whole.
func (s *Store) Query(q history.Query) ([]*testrun.Run, error) {
	var runs []*testrun.Run
	scan := false
	err := s.view(func(tx *bbolt.Tx) error {
		idx, b := tx.Bucket(indexBucket), tx.Bucket(runsBucket)
		if b == nil {
			return nil
		}
		if idx == nil || string(idx.Get(indexVersionKey)) != indexVersion {
			scan = true
			return nil
		}
		ids, all := candidates(idx, q)
		if scan = all; all {
			return nil
		}
		for _, id := range ids {
			v := b.Get([]byte(id))
			if v == nil {
				continue
			}
			r, err := testrun.DecodeRun(bytes.Clone(v))
			if err != nil {
				return fmt.Errorf("run %s: %w", id, err)
			}
			if r.Notes, err = notesOf(tx, id); err != nil {
				return err
			}
			runs = append(runs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if scan {
		return history.Scan(s, q)
	}
	testrun.SortRuns(runs)
	return history.Apply(runs, q), nil
}

// Count is the number of stored runs.
func (s *Store) Count() (int, error) {
	n := 0
	err := s.view(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(runsBucket); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n, err
}
