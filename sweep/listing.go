package sweep

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

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
