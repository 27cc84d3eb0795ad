package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// What Open checks of a store's file before the database code maps
// it, and the error it refuses a damaged one with.

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
	// Read under a shared lock: a writer (which holds the exclusive lock
	// for as long as it has the store open) could otherwise be writing
	// the pages read here, and a store being written is no damaged one.
	if err := lockShared(f); err != nil {
		return fmt.Errorf("history store %s: %w", path, err)
	}
	if fi, err = f.Stat(); err != nil {
		return fmt.Errorf("history store %s: %w", path, err)
	}
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
	if err := lockShared(f); err != nil {
		return nil, err
	}
	return f.Stat()
}

// lockShared takes the file's lock shared (readers share it; a writer
// holds it alone), waiting up to storeLockTimeout; closing f releases it.
func lockShared(f *os.File) error {
	deadline := time.Now().Add(storeLockTimeout)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("still locked by another kvsweep after %v", storeLockTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
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
