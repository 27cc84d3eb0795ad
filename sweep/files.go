package sweep

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Size limits of the files kvsweep reads from a sweep directory. A sweep
// directory may come from anywhere (a shared file system, a colleague, an
// archive): every read is bounded and stays inside the directory.
const (
	MaxManifestSize  = 512 << 20
	MaxJournalSize   = 512 << 20
	MaxMarkerSize    = 64 << 10
	MaxObservedSize  = 128 << 20
	MaxResultsSize   = 1 << 30
	MaxRevisionsSize = 1 << 20
)

// RefusedError is a file of a sweep directory that ReadFile would not
// read. Error() is "REL REASON": "cells/ID/exit is a named pipe, not a
// regular file".
type RefusedError struct {
	Rel    string // the path inside the sweep directory
	Reason string // "is a link to ..., outside the sweep directory", ...
}

func (e *RefusedError) Error() string { return e.Rel + " " + e.Reason }

// ReadFile reads rel, a slash-separated path inside the sweep directory
// dir, refusing (with a *RefusedError) what a sweep directory never
// legitimately holds: a path that leaves dir (through "..", or a link in
// any component, the last or a directory above it), anything but a
// regular file (a FIFO would block the reader forever, a device would
// never end), and a file over max bytes. A missing file is an error
// wrapping fs.ErrNotExist.
func ReadFile(dir, rel string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, plainOpen(err, dir)
	}
	defer root.Close()
	return readIn(root, filepath.FromSlash(rel), dir, rel, max)
}

// readIn is ReadFile of name inside root, which is the directory rel's
// last component is in; dir and rel name it for errors.
func readIn(root *os.Root, name, dir, rel string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO must not wait for a writer; on a regular
	// file it changes nothing.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, plainOpen(err, filepath.Join(dir, filepath.FromSlash(rel)))
		}
		return nil, &RefusedError{rel, escape(dir, rel, err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readChecked(fi.Mode(), fi.Size(), f.Read, rel, max, nil)
}

// readChecked reads an open file of that mode and size through read,
// refusing anything but a regular file of at most max bytes; into, when
// it has room, holds what is read.
func readChecked(mode fs.FileMode, size int64, read func([]byte) (int, error), rel string, max int64, into []byte) ([]byte, error) {
	if !mode.IsRegular() {
		return nil, &RefusedError{rel, "is a " + FileKind(mode) + ", not a regular file"}
	}
	if size > max {
		return nil, &RefusedError{rel, fmt.Sprintf("is %s, over the %s limit", Size(size), Size(max))}
	}
	// Sized from the stat, with a byte to spare to see the end.
	buf := into[:0]
	if int64(cap(buf)) < size+1 {
		buf = make([]byte, 0, size+1)
	}
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return nil, &RefusedError{rel, fmt.Sprintf("grew past the %s limit while being read", Size(max))}
			}
			more := int64(len(buf)) + 512
			buf = slices.Grow(buf, int(min(max+1-int64(len(buf)), more)))
		}
		want := cap(buf) - len(buf)
		n, err := read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || (n == 0 && err == nil) {
			break
		}
		if err == nil && n < want && int64(len(buf)) == size && size > 0 {
			// A regular file read short, at the size its stat gave: its
			// end, without another call to read it.
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
	}
	if int64(len(buf)) > max {
		return nil, &RefusedError{rel, fmt.Sprintf("grew past the %s limit while being read", Size(max))}
	}
	return buf, nil
}

// plainOpen is a failed open as a user reads it: os.Root's errors speak
// of the system call ("openat NAME") and of the name inside the root; this
// one says "open PATH", the path as the caller named it. The cause stays
// wrapped (errors.Is(err, fs.ErrNotExist) holds).
func plainOpen(err error, path string) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: "open", Path: path, Err: pe.Err}
}

// IsFile reports whether rel, a slash-separated path inside the sweep
// directory dir, is a regular file there (never through a link out).
func IsFile(dir, rel string) bool {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	fi, err := root.Lstat(filepath.FromSlash(rel))
	return err == nil && fi.Mode().IsRegular()
}

// escape says which link takes rel out of dir, for a refused open.
func escape(dir, rel string, err error) string {
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := filepath.Join(dir, filepath.Join(parts[:i+1]...))
		fi, lerr := os.Lstat(p)
		if lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, _ := os.Readlink(p)
		where := outsideOf(dir, rel, p, target)
		if i == len(parts)-1 {
			return fmt.Sprintf("is a link to %s, outside %s", target, where)
		}
		return fmt.Sprintf("is under %s, a link to %s, outside %s", strings.Join(parts[:i+1], "/"), target, where)
	}
	return fmt.Sprintf("is outside the sweep directory (%v)", err)
}

// outsideOf says what a refused link at p (rel in the sweep directory
// dir) leads out of: the sweep directory, or, for a cell's file that leads
// to another place inside the sweep (a sibling cell's result), the cell's
// directory, which a cell's files are read inside of.
func outsideOf(dir, rel, p, target string) string {
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(filepath.Dir(p), target)
	}
	inSweep, err := filepath.Rel(dir, abs)
	parts := strings.Split(rel, "/")
	if err == nil && inSweep != ".." && !strings.HasPrefix(inSweep, "../") && len(parts) > 2 && parts[0] == CellsDir {
		return "its cell's directory (" + parts[0] + "/" + parts[1] + ")"
	}
	return "the sweep directory"
}

// Size is a byte count for messages: "512 B", "64.0 KiB", "16.0 MiB".
func Size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// FileKind names what a file that is not a regular one is, for messages:
// "directory", "named pipe", "socket", "device", "special file".
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
