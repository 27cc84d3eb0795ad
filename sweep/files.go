package sweep

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
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
	return readChecked(fi.Mode(), fi.Size(), f.Read, rel, max, nil)
}

// readChecked reads an open file of that mode and size through read,
// refusing anything but a regular file of at most max bytes; into, when
// it has room, holds what is read.
func readChecked(mode fs.FileMode, size int64, read func([]byte) (int, error), rel string, max int64, into []byte) ([]byte, error) {
	if !mode.IsRegular() {
		return nil, &RefusedError{rel, "is a " + kind(mode) + ", not a regular file"}
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

// Cells is the cells/ directory of a sweep directory, opened once: Collect
// reads every cell's files through it.
type Cells struct {
	dir  string
	root *os.Root // nil when cells/ could not be opened
	d    *os.File // cells/, for opening a cell directory relative to it
	err  error
}

// OpenCells opens cells/ of the sweep directory dir, whose root sweep is.
func OpenCells(sweep *os.Root, dir string) *Cells {
	root, err := sweep.OpenRoot(CellsDir)
	cs := &Cells{dir: dir, root: root, err: err}
	if err == nil {
		cs.d, _ = root.Open(".") // without it, every cell takes os.Root's way
	}
	return cs
}

// Close releases the directory.
func (cs *Cells) Close() {
	if cs.d != nil {
		cs.d.Close()
	}
	if cs.root != nil {
		cs.root.Close()
	}
}

// CellFiles reads the files of one cell directory, cells/ID, through one
// open handle with ReadFile's guarantees: the directory is listed once, so
// a file it does not hold is absent without a system call, and the
// directory and a file directly in it are opened relative to their
// parent's handle, without following a link (a link, a cell id that is a
// path, or a path below the cell directory takes os.Root's way, which
// follows links that stay inside). Collect opens one per cell instead of
// walking the path anew for every file; a 10,000-cell sweep is 10,000 of
// these.
type CellFiles struct {
	dir, prefix, id string
	parent          *os.Root // cells/
	fd              int      // cells/ID; -1 when it could not be opened
	d               *os.File // cells/ID when os.Root opened it (fd is its)
	root            *os.Root // cells/ID as a root, opened when first needed
	names           listing
	err             error // why cells/ID could not be opened
}

// listing is the names in a cell directory, sorted. A collect lists
// every cell directory, so the names every cell has (exit, result.json,
// ...) are the package's own strings, not a copy per cell, and the
// listing is one slice, not a map: a 10,000-cell collect made 10,000
// maps and 20,000 copies of the same few names.
type listing []string

func (l listing) has(name string) bool {
	_, ok := slices.BinarySearch(l, name)
	return ok
}

// cellFileNames are the names a cell directory holds as a rule.
var cellFileNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{ExitFile, ResultFile, RevisionsFile, MismatchFile, AdapterLog, AdapterFailedFile, NoRevisionsFile, StartedFile} {
		m[n] = n
	}
	return m
}()

// Open opens cells/ID.
func (cs *Cells) Open(id string) *CellFiles {
	c := &CellFiles{dir: cs.dir, prefix: CellsDir + "/" + id + "/", id: id, parent: cs.root, fd: -1}
	if cs.root == nil {
		c.err = cs.err // said per file by ReadFile
		return c
	}
	if cs.d != nil && plainName(id) {
		fd, err := unix.Openat(int(cs.d.Fd()), id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			if names, err := dirNames(fd); err == nil {
				c.fd, c.names = fd, names
				return c
			}
			unix.Close(fd)
		case errors.Is(err, unix.ENOENT):
			c.err = &fs.PathError{Op: "open", Path: CellsDir + "/" + id, Err: fs.ErrNotExist}
			return c
		}
		// A link, not a directory, or anything else unusual: os.Root
		// decides and explains.
	}
	d, err := cs.root.Open(filepath.FromSlash(id))
	if err != nil {
		c.err = err
		return c
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		d.Close()
		c.err = &fs.PathError{Op: "open", Path: CellsDir + "/" + id, Err: err}
		return c
	}
	c.d, c.fd = d, int(d.Fd())
	slices.Sort(names)
	c.names = names
	return c
}

// plainName says whether name is one path component.
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsRune(name, '/')
}

// dirents are the buffers dirNames reads directory entries into.
var dirents = sync.Pool{New: func() any { b := make([]byte, 8<<10); return &b }}

// dirNames lists the directory open as fd, sorted, without "." and "..".
func dirNames(fd int) (listing, error) {
	bp := dirents.Get().(*[]byte)
	defer dirents.Put(bp)
	var names listing
	for {
		n, err := unix.ReadDirent(fd, *bp)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			slices.Sort(names)
			return names, nil
		}
		var ok bool
		if names, ok = appendDirents(names, (*bp)[:n]); !ok {
			return nil, fmt.Errorf("a directory entry that does not parse")
		}
	}
}

// cellRoot is cells/ID as an os.Root.
func (c *CellFiles) cellRoot() (*os.Root, error) {
	if c.root == nil {
		r, err := c.parent.OpenRoot(filepath.FromSlash(c.id))
		if err != nil {
			return nil, err
		}
		c.root = r
	}
	return c.root, nil
}

// ReadFile reads name (slash-separated, inside the cell directory).
func (c *CellFiles) ReadFile(name string, max int64) ([]byte, error) {
	return c.ReadFileInto(name, max, nil)
}

// ReadFileInto is ReadFile reading into buf when it has room: what it
// returns may be buf's array, which the caller reuses only when nothing
// kept refers to it.
func (c *CellFiles) ReadFileInto(name string, max int64, buf []byte) ([]byte, error) {
	if c.fd < 0 {
		switch {
		case errors.Is(c.err, fs.ErrNotExist) || errors.Is(c.err, fs.ErrPermission):
			return nil, c.err
		case errors.Is(c.err, syscall.ENOTDIR):
			return nil, &RefusedError{c.prefix + name, "is under " + strings.TrimSuffix(c.prefix, "/") + ", which is not a directory"}
		}
		return nil, &RefusedError{c.prefix + name, escape(c.dir, c.prefix+name, c.err)}
	}
	if !c.Has(name) {
		return nil, &fs.PathError{Op: "open", Path: c.prefix + name, Err: fs.ErrNotExist}
	}
	if plainName(name) {
		fd, err := unix.Openat(c.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			return readFD(fd, c.prefix+name, max, buf)
		case errors.Is(err, unix.ENOENT):
			return nil, &fs.PathError{Op: "open", Path: c.prefix + name, Err: fs.ErrNotExist}
		}
		// A link, or anything else unusual: os.Root decides and explains.
	}
	root, err := c.cellRoot()
	if err != nil {
		return nil, &RefusedError{c.prefix + name, escape(c.dir, c.prefix+name, err)}
	}
	return readIn(root, filepath.FromSlash(name), c.dir, c.prefix+name, max)
}

// readFD is readIn of a file open as fd, which it closes, into buf when
// it has room.
func readFD(fd int, rel string, max int64, buf []byte) ([]byte, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return readChecked(statMode(uint32(st.Mode)), st.Size, func(p []byte) (int, error) {
		for {
			n, err := unix.Read(fd, p)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return 0, err
			}
			if n == 0 && len(p) > 0 {
				return 0, io.EOF
			}
			return n, nil
		}
	}, rel, max, buf)
}

// statMode is the type bits of a stat's mode as an fs.FileMode.
func statMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	}
	return fs.ModeDevice
}

// Has reports whether the cell directory's listing holds name (its first
// component, for a path below): when it does not, ReadFile of name says
// fs.ErrNotExist, and Has says so without the error's allocations (a
// collect asks every cell for five files most cells do not have). When
// the directory could not be listed, Has is true: ReadFile says why.
func (c *CellFiles) Has(name string) bool {
	if c.fd < 0 {
		return true
	}
	first, _, _ := strings.Cut(name, "/")
	return c.names.has(first)
}

// IsFile reports whether name is a regular file in the cell directory.
func (c *CellFiles) IsFile(name string) bool {
	if c.fd < 0 || !c.names.has(name) {
		return false
	}
	if !strings.Contains(name, "/") {
		var st unix.Stat_t
		for {
			err := unix.Fstatat(c.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			if err == syscall.EINTR {
				continue
			}
			return err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
		}
	}
	root, err := c.cellRoot()
	if err != nil {
		return false
	}
	fi, err := root.Lstat(filepath.FromSlash(name))
	return err == nil && fi.Mode().IsRegular()
}

// Close releases the directory.
func (c *CellFiles) Close() {
	switch {
	case c.d != nil:
		c.d.Close()
	case c.fd >= 0:
		unix.Close(c.fd)
	}
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
