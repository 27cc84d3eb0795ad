package testrun

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"unicode/utf8"

	"github.com/kvsweep/kvsweep/sweep"
)

// Evidence is one file a cell's harness listed in evidence[], as reports
// show it: its path relative to the sweep directory, its size, the first
// lines of a small text file, or why it cannot be shown.
type Evidence struct {
	Path    string // cells/ID/PATH, relative to the sweep directory
	Size    int64
	Head    string // the first HeadLines lines of a text file of at most HeadMax bytes
	Problem string // missing, not a regular file, outside the sweep
}

// What reports inline of a small text file.
const (
	HeadLines = 5
	HeadMax   = 64 << 10
	headBytes = 1 << 10
)

// EvidenceOf reads what the reports show of a cell's evidence files, from
// the run's sweep directory (with none, the paths alone). Only regular
// files inside the cell's directory are read, and of those only the
// beginning: a link out of the sweep, a pipe or a device is named with
// what it is, never opened.
func (r *Run) EvidenceOf(c CellResult) []Evidence {
	var out []Evidence
	var root *os.Root
	if r.Dir != "" {
		if rt, err := os.OpenRoot(path.Join(r.Dir, sweep.CellsDir, c.CellID)); err == nil {
			root = rt
			defer root.Close()
		}
	}
	for _, p := range c.Evidence {
		e := Evidence{Path: path.Join(sweep.CellsDir, c.CellID, path.Clean(p))}
		if root != nil {
			e.Size, e.Head, e.Problem = readEvidence(root, path.Clean(p))
		}
		out = append(out, e)
	}
	return out
}

// readEvidence is a file's size and head, or what is wrong with it.
func readEvidence(root *os.Root, name string) (int64, string, string) {
	fi, err := root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, "", "missing"
	case err != nil:
		return 0, "", "outside the cell's directory"
	case fi.Mode()&fs.ModeSymlink != 0:
		return 0, "", "a symbolic link, not a file"
	case !fi.Mode().IsRegular():
		return 0, "", "a " + sweep.FileKind(fi.Mode()) + ", not a file"
	}
	if fi.Size() > HeadMax {
		return fi.Size(), "", ""
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fi.Size(), "", "unreadable"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, headBytes))
	return fi.Size(), head(b), ""
}

// head is the first HeadLines lines of b, "" when b is not text.
func head(b []byte) string {
	if bytes.IndexByte(b, 0) >= 0 {
		return ""
	}
	lines := bytes.SplitAfterN(b, []byte("\n"), HeadLines+1)
	if len(lines) > HeadLines {
		lines = lines[:HeadLines]
	}
	h := bytes.TrimRight(bytes.Join(lines, nil), "\n")
	for !utf8.Valid(h) && len(h) > 0 {
		h = h[:len(h)-1] // a rune cut at the 1 KiB mark
	}
	return string(h)
}
