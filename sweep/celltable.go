package sweep

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// A job's cells live in two files: the cell table (Job.Table), where line
// i+1 describes the cell at index i as "ID ARGV AGENT SERVICE", and the
// args file (Job.Args), which holds the command lines. Each of ARGV, AGENT
// and SERVICE is OFFSET:LENGTH of that command line's NUL-terminated words
// in the args file, or "-" for none. The job script reads its line with
// sed and the words with mapfile -d '', so no word is ever parsed by a
// shell. CellTableEntry, EncodeCellTable and ReadCellTable are the Go side
// of that format; a test runs the script's reader against them.

// CellTableEntry is one line of a cell table with its command lines.
type CellTableEntry struct {
	ID      string
	Argv    []string // the harness
	Agent   []string // the node agent of a two-node cell
	Service []string // the sidecar service
}

// EncodeCellTable returns a job's cell table and the args file it points into.
func EncodeCellTable(entries []CellTableEntry) (table, args []byte) {
	var t, a bytes.Buffer
	ref := func(argv []string) string {
		if len(argv) == 0 {
			return "-"
		}
		off := a.Len()
		for _, w := range argv {
			a.WriteString(w)
			a.WriteByte(0)
		}
		return strconv.Itoa(off) + ":" + strconv.Itoa(a.Len()-off)
	}
	for _, e := range entries {
		fmt.Fprintf(&t, "%s %s %s %s\n", e.ID, ref(e.Argv), ref(e.Agent), ref(e.Service))
	}
	return t.Bytes(), a.Bytes()
}

// ReadCellTable reads the cell table and args file of job j in dir.
func ReadCellTable(dir string, j *Job) ([]CellTableEntry, error) {
	tab, err := ReadFile(dir, j.Table, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	args, err := ReadFile(dir, j.Args, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(tab), "\n"), "\n")
	out := make([]CellTableEntry, 0, len(lines))
	for i, l := range lines {
		f := strings.Split(l, " ")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: expected \"ID ARGV AGENT SERVICE\", got %q", j.Table, i+1, l)
		}
		e := CellTableEntry{ID: f[0]}
		for k, dst := range []*[]string{&e.Argv, &e.Agent, &e.Service} {
			if *dst, err = words(args, f[k+1]); err != nil {
				return nil, fmt.Errorf("%s:%d: field %d: %v", j.Table, i+1, k+2, err)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// words reads the NUL-terminated words at OFFSET:LENGTH of args.
func words(args []byte, ref string) ([]string, error) {
	if ref == "-" {
		return nil, nil
	}
	o, l, ok := strings.Cut(ref, ":")
	off, err1 := strconv.Atoi(o)
	n, err2 := strconv.Atoi(l)
	if !ok || err1 != nil || err2 != nil || off < 0 || n < 1 || off > len(args)-n || args[off+n-1] != 0 {
		return nil, fmt.Errorf("%q: expected OFFSET:LENGTH of NUL-terminated words inside the %d-byte args file", ref, len(args))
	}
	return strings.Split(string(args[off:off+n-1]), "\x00"), nil
}
