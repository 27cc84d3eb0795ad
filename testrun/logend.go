package testrun

import (
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kvsweep/kvsweep/internal/shq"
	"github.com/kvsweep/kvsweep/sweep"
)

// Bounds on the end of a job's output a HARNESS_FAILED detail carries: the
// cause of a harness that failed is most often in its last lines (a file
// it could not open, a flag it did not take), and the detail is stored
// with the run, so it stays short.
const (
	logEndLines    = 5
	logEndLineMax  = 200
	logEndReadSize = 8 << 10
)

// logEnd is what the detail of a cell whose harness failed without a
// result adds: the last lines of its job's output (the newest, when it ran
// more than once), each escaped and cut short; "" when it has none. root
// is the sweep directory's absolute path. (Collect's caller names the
// command that shows all of it, kvsweep logs DIR CELL: only it knows the
// directory as the user wrote it.)
func logEnd(root, cellID string) string {
	var newest string
	var when int64
	for _, rel := range sweep.LogFiles(root, cellID) {
		name := rel[strings.LastIndexByte(rel, '/')+1:]
		if !strings.HasSuffix(name, ".out") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err == nil && (newest == "" || fi.ModTime().UnixNano() > when) {
			newest, when = rel, fi.ModTime().UnixNano()
		}
	}
	if newest == "" {
		return ""
	}
	tail, _, err := sweep.Tail(root, newest, logEndLines+1, logEndReadSize)
	if err != nil {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(tail, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "kvsweep: cell ") {
			lines = append(lines, escapeLine(l))
		}
	}
	if len(lines) > logEndLines {
		lines = lines[len(lines)-logEndLines:]
	}
	if len(lines) == 0 {
		return ""
	}
	return "; its log ends: " + strings.Join(lines, " | ")
}

// escapeLine makes one line of a log safe to print and store: control
// characters and bytes that are not UTF-8 as \xNN, at most logEndLineMax
// bytes of it.
func escapeLine(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if b.Len() >= logEndLineMax {
			b.WriteString("...")
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x` + hex2(s[i]))
		case r == '\t':
			b.WriteByte(' ')
		case !unicode.IsPrint(r) && r != ' ':
			for _, c := range []byte(s[i : i+n]) {
				b.WriteString(`\x` + hex2(c))
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// LogsHint names the command that shows a cell's logs, for a cell whose
// harness failed or never started ("" for any other): what collect adds
// to the cell's detail when it prints it. dir is the sweep directory as
// the user wrote it.
func (c *CellResult) LogsHint(dir string) string {
	if c.Outcome != HarnessFailed && c.Outcome != NotStarted {
		return ""
	}
	return " (its logs: kvsweep logs " + shq.Quote(dir) + " " + c.CellID + ")"
}
