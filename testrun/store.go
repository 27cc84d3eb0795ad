package testrun

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// BoltStore is the run history: an embedded bbolt database (one file, no
// server). Each Put is one transaction, so a run is stored whole or not at
// all, and a crash never leaves a torn file. Processes take turns through
// the file lock: a second collect waits (up to Timeout) for the first to
// finish, and both runs are kept. A run is keyed by its sweep id, so
// collecting a sweep again replaces its run.
type BoltStore struct {
	db   *bolt.DB
	path string
}

var runsBucket = []byte("runs")

// DefaultStorePath is $KVSWEEP_STORE, else ~/.local/share/kvsweep/history.db.
func DefaultStorePath() string {
	if p := os.Getenv("KVSWEEP_STORE"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "kvsweep-history.db"
	}
	return filepath.Join(home, ".local", "share", "kvsweep", "history.db")
}

// OpenStore opens (creating) the store at path. readOnly opens share the
// file with other readers. A file there that is no history store, or one
// damaged (cut short, overwritten), is refused with what is wrong and how
// to recover, and left as it is.
func OpenStore(path string, readOnly bool) (*BoltStore, error) {
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
	s := &BoltStore{path: path}
	err := s.guard(func() (err error) {
		s.db, err = bolt.Open(path, 0o644, &bolt.Options{Timeout: storeLockTimeout, ReadOnly: readOnly})
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
		if err := s.update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(runsBucket)
			return err
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
func (s *BoltStore) guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedStoreError{Path: s.path, Problem: fmt.Sprintf("is damaged (%v)", r)}
		}
	}()
	return f()
}

// view and update are the database's transactions, guarded.
func (s *BoltStore) view(f func(*bolt.Tx) error) error {
	return s.guard(func() error { return s.db.View(f) })
}

func (s *BoltStore) update(f func(*bolt.Tx) error) error {
	return s.guard(func() error { return s.db.Update(f) })
}

// Close releases the file.
func (s *BoltStore) Close() error { return s.db.Close() }

// Put stores run, replacing an earlier run of the same sweep.
func (s *BoltStore) Put(run *Run) error {
	b, err := EncodeRun(run)
	if err != nil {
		return err
	}
	return s.put(run.ID, b)
}

// PutEncoded stores a run encoded by EncodeRun (results.json's bytes).
func (s *BoltStore) PutEncoded(run *Run, doc []byte) error {
	return s.put(run.ID, bytes.TrimSuffix(doc, []byte("\n")))
}

// String is the store's path.
func (s *BoltStore) String() string { return s.path }

// put stores a run as encoded (json.Marshal's bytes, without notes).
func (s *BoltStore) put(id string, b []byte) error {
	return s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(runsBucket).Put([]byte(id), b)
	})
}

// Get returns the run of a sweep id, or nil.
func (s *BoltStore) Get(id string) (*Run, error) {
	var run *Run
	err := s.view(func(tx *bolt.Tx) error {
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
		if run, err = decodeRun(bytes.Clone(v)); err != nil {
			return err
		}
		notes, err := notesOf(tx, id)
		run.Notes = notes
		return err
	})
	return run, err
}

// Runs returns every stored run, oldest first (by start, then collection).
func (s *BoltStore) Runs() ([]*Run, error) {
	var runs []*Run
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(runsBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			r, err := decodeRun(bytes.Clone(v))
			if err != nil {
				return fmt.Errorf("run %s: %w", k, err)
			}
			r.Notes, err = notesOf(tx, r.ID)
			runs = append(runs, r)
			return err
		})
	})
	sortRuns(runs)
	return runs, err
}

func sortRuns(runs []*Run) {
	sort.SliceStable(runs, func(i, j int) bool { return runKey(runs[i]) < runKey(runs[j]) })
}

func runKey(r *Run) string {
	if r.Started != "" {
		return r.Started
	}
	return r.CollectedAt.Format(time.RFC3339)
}

// CopyStore writes a consistent copy of the store at src to dst, a new
// file (an existing one is refused, never replaced), while other kvsweeps
// may read and write src: the last good copy to restore a damaged store
// from. The copy is written under a temporary name, synced, renamed, and
// opened again to check it before CopyStore returns.
func CopyStore(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%s already exists: kvsweep store copy writes a new file, it never replaces one", dst)
	}
	st, err := OpenStore(src, true)
	if err != nil {
		return err
	}
	defer st.Close()
	err = sweep.WriteAtomic(dst, 0o644, func(w io.Writer) error {
		return st.view(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(w)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("copying history store %s to %s: %w", src, dst, err)
	}
	cp, err := OpenStore(dst, true)
	if err != nil {
		return err
	}
	defer cp.Close()
	_, err = cp.Runs()
	return err
}
