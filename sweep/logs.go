package sweep

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// MaxLogFiles bounds the log files listed for one cell.
const MaxLogFiles = 64

// logDirs are the cell subdirectories whose *.log files are listed.
var logDirs = []string{"services", "remote"}

// LogFiles lists the logs of a cell, slash-separated paths relative to
// the sweep directory dir: the job's output (cells/ID/slurm-*.out, or
// k8s-*.out from a Kubernetes pod), then
// the cell's other *.log files (etcd), then services/*.log and remote/*.log
// (agent, barrier). Only regular files inside the sweep are listed.
func LogFiles(dir, cellID string) []string {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	cell := CellsDir + "/" + cellID
	var out []string
	list := func(sub string, match func(string) bool) {
		f, err := root.Open(filepath.FromSlash(sub))
		if err != nil {
			return
		}
		defer f.Close()
		names, _ := f.Readdirnames(4 * MaxLogFiles)
		slices.Sort(names)
		for _, n := range names {
			rel := sub + "/" + n
			if len(out) < MaxLogFiles && match(n) && IsFile(dir, rel) {
				out = append(out, rel)
			}
		}
	}
	list(cell, func(n string) bool {
		return (strings.HasPrefix(n, "slurm-") || strings.HasPrefix(n, "k8s-")) && strings.HasSuffix(n, ".out")
	})
	list(cell, func(n string) bool { return strings.HasSuffix(n, ".log") })
	for _, d := range logDirs {
		list(cell+"/"+d, func(n string) bool { return strings.HasSuffix(n, ".log") })
	}
	return out
}

// Tail returns the last n lines of rel (a path inside dir, as ReadFile
// takes it), reading at most limit bytes from its end however large it is.
// It also returns the file's size, for a reader that follows it.
func Tail(dir, rel string, n int, limit int64) (string, int64, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", 0, plainOpen(err, dir)
	}
	defer root.Close()
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, plainOpen(err, filepath.Join(dir, filepath.FromSlash(rel)))
		}
		return "", 0, &RefusedError{rel, escape(dir, rel, err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, &RefusedError{rel, "is a " + FileKind(fi.Mode()) + ", not a regular file"}
	}
	size := fi.Size()
	from := max(0, size-limit)
	b, err := io.ReadAll(io.NewSectionReader(f, from, size-from))
	if err != nil {
		return "", size, err
	}
	if from > 0 {
		// Drop the partial first line.
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, ""), size, nil
}

// ReadFrom returns what rel holds past offset, at most limit bytes, and the
// offset after it: how a follower reads what a log gained.
func ReadFrom(dir, rel string, offset, limit int64) ([]byte, int64, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, offset, plainOpen(err, dir)
	}
	defer root.Close()
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, offset, plainOpen(err, filepath.Join(dir, filepath.FromSlash(rel)))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, offset, err
	}
	if fi.Size() < offset { // truncated or replaced: start over
		offset = 0
	}
	b, err := io.ReadAll(io.NewSectionReader(f, offset, min(fi.Size()-offset, limit)))
	return b, offset + int64(len(b)), err
}
