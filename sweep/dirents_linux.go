package sweep

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// appendDirents appends the names of the linux_dirent64 records in buf
// (what getdents64 returned) to names, as unix.ParseDirent reads them,
// a name a cell directory holds as a rule as the package's own string.
func appendDirents(names listing, buf []byte) (listing, bool) {
	records := 0
	for rest, ok := buf, true; ok && len(rest) > 0; records++ {
		_, rest, ok = dirent(rest)
	}
	names = slices.Grow(names, records)
	for len(buf) > 0 {
		name, rest, ok := dirent(buf)
		if !ok {
			return names, false
		}
		buf = rest
		// A zero d_ino is a file too on Linux (old XFS, FUSE).
		if string(name) == "." || string(name) == ".." {
			continue
		}
		if known, ok := cellFileNames[string(name)]; ok {
			names = append(names, known)
		} else {
			names = append(names, string(name))
		}
	}
	return names, true
}

// dirent splits the first record off buf: its name and the records after
// it; ok is false when buf does not start with a whole record.
func dirent(buf []byte) (name, rest []byte, ok bool) {
	// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen;
	// u8 d_type; char d_name[]; }, d_name NUL-terminated and padded.
	const nameAt = 19
	if len(buf) < nameAt {
		return nil, nil, false
	}
	reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
	if reclen < nameAt || reclen > len(buf) {
		return nil, nil, false
	}
	name = buf[nameAt:reclen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return name, buf[reclen:], true
}
