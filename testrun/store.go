package testrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Store is the run history: an embedded bbolt database (one file, no
// server). Each Put is one transaction, so a run is stored whole or not at
// all, and a crash never leaves a torn file. Processes take turns through
// the file lock: a second collect waits (up to Timeout) for the first to
// finish, and both runs are kept. A run is keyed by its sweep id, so
// collecting a sweep again replaces its run.
type Store struct {
	db *bolt.DB
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
// file with other readers.
func OpenStore(path string, readOnly bool) (*Store, error) {
	if !readOnly {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("history store %s: %w (collect a sweep first)", path, err)
	}
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 2 * time.Minute, ReadOnly: readOnly})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("history store %s: still locked by another kvsweep after 2 minutes", path)
		}
		return nil, fmt.Errorf("history store %s: %w", path, err)
	}
	if !readOnly {
		if err := db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(runsBucket)
			return err
		}); err != nil {
			db.Close()
			return nil, err
		}
	}
	return &Store{db: db}, nil
}

// Close releases the file.
func (s *Store) Close() error { return s.db.Close() }

// Put stores run, replacing an earlier run of the same sweep.
func (s *Store) Put(run *Run) error {
	cp := *run
	cp.Notes = nil // kept in their own bucket
	var b bytes.Buffer
	if err := encodeRun(&b, &cp); err != nil {
		return err
	}
	return s.put(run.ID, bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// put stores a run as encoded (json.Marshal's bytes, without notes).
func (s *Store) put(id string, b []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(runsBucket).Put([]byte(id), b)
	})
}

// Get returns the run of a sweep id, or nil.
func (s *Store) Get(id string) (*Run, error) {
	var run *Run
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(runsBucket)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(id))
		if v == nil {
			return nil
		}
		run = &Run{}
		if err := json.Unmarshal(v, run); err != nil {
			return err
		}
		notes, err := notesOf(tx, id)
		run.Notes = notes
		return err
	})
	return run, err
}

// Runs returns every stored run, oldest first (by start, then collection).
func (s *Store) Runs() ([]*Run, error) {
	var runs []*Run
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(runsBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var r Run
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("run %s: %w", k, err)
			}
			notes, err := notesOf(tx, r.ID)
			r.Notes = notes
			runs = append(runs, &r)
			return err
		})
	})
	sort.SliceStable(runs, func(i, j int) bool { return runKey(runs[i]) < runKey(runs[j]) })
	return runs, err
}

func runKey(r *Run) string {
	if r.Started != "" {
		return r.Started
	}
	return r.CollectedAt.Format(time.RFC3339)
}
