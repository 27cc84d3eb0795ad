//go:build !linux

package sweep

import "golang.org/x/sys/unix"

// appendDirents appends the names of the directory entries in buf (what
// getdents returned) to names.
func appendDirents(names listing, buf []byte) (listing, bool) {
	_, _, names = unix.ParseDirent(buf, -1, names)
	return names, true
}
