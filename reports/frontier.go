package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// The reports of a search directory (frontier.json, written by kvsweep
// search): per cell the operating point and the probes, as markdown, a
// table, CSV, JSON and an HTML page that draws throughput against latency
// (frontierview.go, frontierpage.go), and the comparison of two searches'
// operating points (frontiercompare.go). This file reads the file and
// holds what it says to the bounds the reports can show.

// The most a frontier the reports show may hold: a search of a large
// matrix has hundreds of cells of a dozen probes, each a few repeats.
const (
	MaxFrontierCells   = 10000
	MaxFrontierProbes  = 1000 // per cell
	MaxFrontierRepeats = 1000 // per probe, and the search's repeats
	maxStatN           = 1 << 20
)

// IsSearchDir says whether dir is a search directory: it holds
// frontier.json (a link counts, so that ReadFrontier refuses it rather
// than the directory being read as a sweep).
func IsSearchDir(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, frontier.FileName))
	return err == nil
}

// IsSearch says whether report's selection names a search directory:
// SEL (args) or, given, the baseline or the candidate.
func IsSearch(args []string, baseline, candidate string) bool {
	for _, d := range searchSides(args, baseline, candidate) {
		if d != "" && IsSearchDir(d) {
			return true
		}
	}
	return false
}

func searchSides(args []string, baseline, candidate string) []string {
	if baseline != "" || candidate != "" {
		return []string{baseline, candidate}
	}
	return args
}

// SearchReport is report on search directories: the report of one
// (SEL, WriteFrontier) or the comparison of two (--baseline and
// --candidate, WriteFrontierComparison). A search beside anything but
// another search, or --check (a search has no gates), is a usage error.
func SearchReport(w io.Writer, format Format, args []string, baseline, candidate string, check bool) error {
	if baseline == "" && candidate == "" && len(args) != 1 {
		return fail.Usagef("give one search directory (SEL), or two as --baseline and --candidate")
	}
	dirs := searchSides(args, baseline, candidate)
	for _, d := range dirs {
		if d == "" || !IsSearchDir(d) {
			return fail.Usagef("%q is not a search directory (one holding %s): a search reports alone or compares with another search (give SEL, or --baseline and --candidate)",
				d, frontier.FileName)
		}
	}
	if check {
		return fail.Usagef("--check judges sweeps: a search directory's report has no gates")
	}
	fs := make([]*frontier.Frontier, len(dirs))
	for i, d := range dirs {
		f, err := ReadFrontier(d)
		if err != nil {
			return err
		}
		fs[i] = f
	}
	if len(fs) == 2 {
		return WriteFrontierComparison(w, format, fs[0], fs[1])
	}
	return WriteFrontier(w, format, fs[0])
}

// ReadFrontier reads dir's frontier.json (frontier.Read: a regular file
// within the size cap, of the format's version) and checks it
// (CheckFrontier). A refusal names the file, the line and column, the
// value and what was expected.
func ReadFrontier(dir string) (*frontier.Frontier, error) {
	path := filepath.Join(dir, frontier.FileName)
	f, err := frontier.Read(dir)
	if err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, fmt.Errorf("%s: not JSON: %v", at(path, syn.Offset, ""), syn)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("%s: %s: %s, expected a %s", at(path, typ.Offset, ""), typ.Field, typ.Value, typ.Type)
		}
		return nil, err
	}
	if p := checkFrontier(f); p != nil {
		return nil, fmt.Errorf("%s: %s", at(path, -1, p.ptr), p)
	}
	return f, nil
}

// at is path:line:col of an offset into the file, or of the value at a
// JSON pointer (offset < 0); path alone when the file cannot be read back.
func at(path string, off int64, ptr string) string {
	b, err := readBounded(path)
	if err != nil {
		return path
	}
	if off < 0 {
		line, col, ok := jsonscan.Locate(b, ptr)
		if !ok {
			return path
		}
		return fmt.Sprintf("%s:%d:%d", path, line, col)
	}
	// encoding/json's offsets are past the token it refused: back to
	// its start.
	off = min(off, int64(len(b)))
	for off > 0 && !isSpace(b[off-1]) && b[off-1] != ':' && b[off-1] != ',' && b[off-1] != '[' {
		off--
	}
	line, col := jsonscan.LineCol(b, off)
	return fmt.Sprintf("%s:%d:%d", path, line, col)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// readBounded reads a regular file of at most frontier.MaxFileBytes.
func readBounded(path string) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > frontier.MaxFileBytes {
		return nil, errors.New("not readable")
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, frontier.MaxFileBytes))
}

// problem is what is wrong with a frontier, at a JSON pointer.
type problem struct{ ptr, msg string }

func (p *problem) Error() string { return p.ptr + ": " + p.msg }

// CheckFrontier refuses a frontier the reports cannot show truthfully: an
// unknown axis, a number that is not finite (a NaN the search computed),
// a negative load, counts past the bounds above, a cell without an id or
// one id twice, an interval whose low end is above its high end. The
// refusal names the value by its JSON pointer.
func CheckFrontier(f *frontier.Frontier) error {
	if p := checkFrontier(f); p != nil {
		return p
	}
	return nil
}

func checkFrontier(f *frontier.Frontier) *problem {
	if f.Axis != frontier.Rate && f.Axis != frontier.Concurrency {
		return &problem{"/axis", fmt.Sprintf("%q, expected %q or %q", f.Axis, frontier.Rate, frontier.Concurrency)}
	}
	if p := count("/repeats", f.Repeats, MaxFrontierRepeats); p != nil {
		return p
	}
	for i, s := range f.SLO {
		if p := finite(fmt.Sprintf("/slo/%d/max", i), s.Max, false); p != nil {
			return p
		}
	}
	if p := count("/cells", len(f.Cells), MaxFrontierCells); p != nil {
		return p
	}
	seen := map[string]int{}
	for i, c := range f.Cells {
		ptr := "/cells/" + strconv.Itoa(i)
		if c.ID == "" {
			return &problem{ptr + "/id", `"", expected the cell's id`}
		}
		if j, ok := seen[c.ID]; ok {
			return &problem{ptr + "/id", fmt.Sprintf("%q, expected each cell once (also /cells/%d)", c.ID, j)}
		}
		seen[c.ID] = i
		if p := checkCell(ptr, &c); p != nil {
			return p
		}
	}
	return nil
}

func checkCell(ptr string, c *frontier.Cell) *problem {
	if p := count(ptr+"/probes", len(c.Probes), MaxFrontierProbes); p != nil {
		return p
	}
	for j, pr := range c.Probes {
		pp := ptr + "/probes/" + strconv.Itoa(j)
		if p := finite(pp+"/load", pr.Load, true); p != nil {
			return p
		}
		if p := count(pp+"/repeats", len(pr.Repeats), MaxFrontierRepeats); p != nil {
			return p
		}
		for k, r := range pr.Repeats {
			for _, name := range sortedKeys(r.Figures) {
				fp := fmt.Sprintf("%s/repeats/%d/figures/%s", pp, k, jsonscan.EscapePointer(name))
				if p := finite(fp, r.Figures[name], false); p != nil {
					return p
				}
			}
		}
		for _, name := range sortedKeys(pr.Stats) {
			if p := checkStat(pp+"/stats/"+jsonscan.EscapePointer(name), pr.Stats[name]); p != nil {
				return p
			}
		}
	}
	if c.Point == nil {
		return nil
	}
	pt := c.Point
	for _, v := range []struct {
		name string
		v    float64
	}{{"load", pt.Load}, {"low", pt.Low}, {"high", pt.High}, {"min_detectable", pt.MinDetectable}} {
		if p := finite(ptr+"/point/"+v.name, v.v, true); p != nil {
			return p
		}
	}
	if pt.Low > pt.High {
		return &problem{ptr + "/point/low", fmt.Sprintf("%s, expected at most the interval's high end %s", num(pt.Low), num(pt.High))}
	}
	return checkStat(ptr+"/point/throughput", pt.Throughput)
}

func checkStat(ptr string, s frontier.Stat) *problem {
	if p := count(ptr+"/n", s.N, maxStatN); p != nil {
		return p
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"mean", s.Mean}, {"low", s.Low}, {"high", s.High}, {"sd", s.SD}} {
		if p := finite(ptr+"/"+v.name, v.v, v.name == "sd"); p != nil {
			return p
		}
	}
	return nil
}

func finite(ptr string, v float64, nonNegative bool) *problem {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return &problem{ptr, fmt.Sprintf("%v, expected a finite number", v)}
	case nonNegative && v < 0:
		return &problem{ptr, fmt.Sprintf("%s, expected a number at least 0", num(v))}
	}
	return nil
}

func count(ptr string, n, most int) *problem {
	if n < 0 || n > most {
		return &problem{ptr, fmt.Sprintf("%d, expected 0 to %d", n, most)}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
