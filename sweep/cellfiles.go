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

	"golang.org/x/sys/unix"
)

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
