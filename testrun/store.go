package testrun

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"syscall"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
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
func OpenStore(path string, readOnly bool) (*Store, error) {
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
			return nil, fmt.Errorf("history store %s: still locked by another kvsweep after 2 minutes", path)
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

// DamagedStoreError is a history store file kvsweep cannot read: what is
// wrong with it, and how to recover.
type DamagedStoreError struct {
	Path, Problem string
}

func (e *DamagedStoreError) Error() string {
	return fmt.Sprintf("history store %s %s; kvsweep left it as it is: restore the last good copy of it (kvsweep store copy makes one), or move it aside and collect again into a new store", e.Path, e.Problem)
}

// The bbolt file format, as far as checkStoreFile reads it: two meta
// pages at the start, each a 16-byte page header and then the meta.
const (
	boltMagic    = 0xED0CDAED
	boltVersion  = 2
	boltPageHead = 16
	boltMetaSize = 64 // magic, version, page size, flags, root (16), freelist, pgid, txid, checksum
)

// checkStoreFile refuses, before the database code maps it, a file at
// path that is no history store or one damaged where reading it would
// fault: not a regular file (a pipe would block the open for ever), empty
// (to read), without a valid header, shorter than its header says, or
// with a free-page list that is not one. A missing file is no refusal: a
// store is created there; so is an empty one to write, which the
// database initialises under its lock (it may be another kvsweep's, being
// created).
func checkStoreFile(path string, readOnly bool) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("history store %s: %w", path, err)
	}
	damaged := func(format string, args ...any) error {
		return &DamagedStoreError{Path: path, Problem: fmt.Sprintf(format, args...)}
	}
	switch {
	case !fi.Mode().IsRegular():
		return damaged("is a %s, not a file", sweep.FileKind(fi.Mode()))
	case fi.Size() == 0 && !readOnly:
		return nil
	case fi.Size() == 0:
		if fi, err = waitCreated(path); err != nil {
			return fmt.Errorf("history store %s: %w", path, err)
		}
		if fi.Size() == 0 {
			return damaged("is empty: no history store")
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("history store %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, min(fi.Size(), 64<<10))
	if _, err := io.ReadFull(f, head); err != nil {
		return fmt.Errorf("history store %s: %w", path, err)
	}
	best, ok := boltMeta(head, 0)
	if m, ok1 := boltMeta(head, pageSizeOr(best, ok)); ok1 && (!ok || m.txid > best.txid) {
		best, ok = m, true
	}
	if !ok {
		return damaged("is not a history store, or its header is damaged (no valid bbolt meta page)")
	}
	if need := int64(best.pgid) * int64(best.pageSize); fi.Size() < need {
		return damaged("is cut short: %d bytes, its header says %d bytes", fi.Size(), need)
	}
	if best.freelist != ^uint64(0) && !freelistFits(f, best, fi.Size()) {
		return damaged("is damaged: its free-page list (page %d) is not one", best.freelist)
	}
	return nil
}

// freelistFits reports whether the meta's free-page list is a free-list
// page whose ids lie inside the file.
func freelistFits(f *os.File, m boltMetaPage, size int64) bool {
	off := int64(m.freelist) * int64(m.pageSize)
	var hdr [boltPageHead + 8]byte
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return false
	}
	le := binary.LittleEndian
	flags, count, overflow := le.Uint16(hdr[8:]), uint64(le.Uint16(hdr[10:])), uint64(le.Uint32(hdr[12:]))
	ids := uint64(0)
	if count == 0xFFFF {
		count, ids = le.Uint64(hdr[16:]), 1
	}
	end := uint64(off) + uint64(m.pageSize)*(overflow+1)
	return flags == 0x10 && overflow < m.pgid && count < m.pgid &&
		uint64(off)+boltPageHead+8*(ids+count) <= end && end <= uint64(size)
}

// waitCreated waits, as a reader of the store would, for a kvsweep that
// holds the file's lock (one creating the store) to let go of it, and
// says what the file is then.
func waitCreated(path string) (os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	deadline := time.Now().Add(storeLockTimeout)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			return nil, errors.New("still locked by another kvsweep after 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f.Stat()
}

type boltMetaPage struct {
	pageSize     uint32
	pgid, txid   uint64
	freelist     uint64
	rootBucketID uint64
}

// boltMeta reads the meta page at offset off of head, if it is one.
func boltMeta(head []byte, off int) (boltMetaPage, bool) {
	start := off + boltPageHead
	if off < 0 || start+boltMetaSize > len(head) {
		return boltMetaPage{}, false
	}
	m := head[start : start+boltMetaSize]
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(m[:56])
	meta := boltMetaPage{pageSize: le.Uint32(m[8:]), rootBucketID: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]),
		pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}
	ok := le.Uint32(m[0:]) == boltMagic && le.Uint32(m[4:]) == boltVersion && le.Uint64(m[56:]) == h.Sum64() &&
		meta.pageSize >= 512 && meta.pageSize <= 64<<10 && meta.pageSize&(meta.pageSize-1) == 0 &&
		meta.pgid >= 2 && meta.rootBucketID < meta.pgid && (meta.freelist < meta.pgid || meta.freelist == ^uint64(0))
	return meta, ok
}

// pageSizeOr is where the second meta page starts: after the first, whose
// page size says where, or at this machine's page size.
func pageSizeOr(m boltMetaPage, ok bool) int {
	if ok {
		return int(m.pageSize)
	}
	return os.Getpagesize()
}

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
func (s *Store) view(f func(*bolt.Tx) error) error {
	return s.guard(func() error { return s.db.View(f) })
}

func (s *Store) update(f func(*bolt.Tx) error) error {
	return s.guard(func() error { return s.db.Update(f) })
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
	return s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(runsBucket).Put([]byte(id), b)
	})
}

// Get returns the run of a sweep id, or nil.
func (s *Store) Get(id string) (*Run, error) {
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
	err := s.view(func(tx *bolt.Tx) error {
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
