package sweep

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
		return nil, err
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
			return nil, err
		}
		return nil, &RefusedError{rel, escape(dir, rel, err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &RefusedError{rel, "is a " + kind(fi.Mode()) + ", not a regular file"}
	}
	if fi.Size() > max {
		return nil, &RefusedError{rel, fmt.Sprintf("is %s, over the %s limit", Size(fi.Size()), Size(max))}
	}
	// Sized from Stat, so a file that does not grow is read without copying.
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	b := buf.Bytes()
	if int64(len(b)) > max {
		return nil, &RefusedError{rel, fmt.Sprintf("grew past the %s limit while being read", Size(max))}
	}
	return b, nil
}

// CellFiles reads the files of one cell directory, cells/ID, through one
// open handle with ReadFile's guarantees: the directory is listed once, so
// a file it does not hold is absent without a system call. Collect opens
// one per cell instead of walking the path anew for every file.
type CellFiles struct {
	dir, prefix string
	root        *os.Root // nil when cells/ID could not be opened
	names       map[string]bool
	err         error // why cells/ID could not be opened
}

// OpenCellFiles opens cells/ID of the sweep directory dir, whose root
// sweep is (one os.Root shared by every cell).
func OpenCellFiles(sweep *os.Root, dir, id string) *CellFiles {
	c := &CellFiles{dir: dir, prefix: CellsDir + "/" + id + "/"}
	rel := CellsDir + "/" + id
	root, err := sweep.OpenRoot(filepath.FromSlash(rel))
	if err != nil {
		c.err = err // said per file by ReadFile
		return c
	}
	c.root = root
	if d, err := root.Open("."); err == nil {
		if names, err := d.Readdirnames(-1); err == nil {
			c.names = make(map[string]bool, len(names))
			for _, n := range names {
				c.names[n] = true
			}
		}
		d.Close()
	}
	return c
}

// ReadFile reads name (slash-separated, inside the cell directory).
func (c *CellFiles) ReadFile(name string, max int64) ([]byte, error) {
	if c.root == nil {
		if errors.Is(c.err, fs.ErrNotExist) || errors.Is(c.err, fs.ErrPermission) {
			return nil, c.err
		}
		return nil, &RefusedError{c.prefix + name, escape(c.dir, c.prefix+name, c.err)}
	}
	first, _, _ := strings.Cut(name, "/")
	if c.names != nil && !c.names[first] {
		return nil, &fs.PathError{Op: "open", Path: c.prefix + name, Err: fs.ErrNotExist}
	}
	return readIn(c.root, filepath.FromSlash(name), c.dir, c.prefix+name, max)
}

// IsFile reports whether name is a regular file in the cell directory.
func (c *CellFiles) IsFile(name string) bool {
	if c.root == nil || (c.names != nil && !c.names[name]) {
		return false
	}
	fi, err := c.root.Lstat(filepath.FromSlash(name))
	return err == nil && fi.Mode().IsRegular()
}

// Close releases the directory.
func (c *CellFiles) Close() {
	if c.root != nil {
		c.root.Close()
	}
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
		if i == len(parts)-1 {
			return fmt.Sprintf("is a link to %s, outside the sweep directory", target)
		}
		return fmt.Sprintf("is under %s, a link to %s, outside the sweep directory", strings.Join(parts[:i+1], "/"), target)
	}
	return fmt.Sprintf("is outside the sweep directory (%v)", err)
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

// WriteFileAtomic writes data to path through a temporary file and rename,
// so a reader sees the old or the new content, never a part.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic is WriteFileAtomic of what write writes, through a buffer.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<16)
	if err := write(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func kind(m fs.FileMode) string {
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
