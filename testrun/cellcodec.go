package testrun

import (
	"encoding/json"
	"strconv"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
	"github.com/kvsweep/kvsweep/result"
)

// results.json is kvsweep's own file, but it is read back from a sweep
// directory, so it is read as any input is: decodeCell below takes the
// cells as WriteRun writes them, and whatever it does not expect goes to
// encoding/json, whose answer is the reference (FuzzDecodeCell).

// cellDecoder decodes one cell of results.json, as json.Unmarshal would,
// with its own interner: one per goroutine. It reuses its scanner from
// cell to cell (a member list's readers are calls through function
// values, which would move a scanner per cell to the heap).
func cellDecoder() func([]byte, *CellResult) error {
	sc := &result.Scratch{}
	s := new(jsonscan.Scanner)
	io := &cellIO{sc: sc}
	return func(b []byte, c *CellResult) error {
		*c = CellResult{}
		io.CellResult = c
		*s = jsonscan.New(b, sc.Interner())
		if cellMembers.Read(s, io, 0) && s.Done() {
			return nil
		}
		*c = CellResult{}
		return json.Unmarshal(b, c)
	}
}

// cellIO is a cell being read or written, with the scratch its case list
// is read through.
type cellIO struct {
	*CellResult
	sc    *result.Scratch
	cases result.CaseWriter
}

// cellMembers are CellResult's members, in field order: the one list its
// reader and writer walk (TestCellMembers holds it to the struct).
var cellMembers = jsonscan.Members[cellIO]{
	jsonscan.M("cell_id", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.CellID, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			return jsonscan.AppendStr(jsonscan.Key(b, "cell_id"), c.CellID), true
		}),
	jsonscan.M("name", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Name, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			return jsonscan.AppendStr(jsonscan.Key(b, "name"), c.Name), true
		}),
	jsonscan.M("params", func(s *jsonscan.Scanner, c *cellIO, depth int) (ok bool) { c.Params, ok = s.StrMap(depth); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			return jsonscan.AppendStrMap(jsonscan.Key(b, "params"), c.Params), true
		}),
	jsonscan.M("planned_cases", func(s *jsonscan.Scanner, c *cellIO, depth int) (ok bool) { c.Planned, ok = s.StrList(depth); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			return jsonscan.AppendStrList(jsonscan.Key(b, "planned_cases"), c.Planned), true
		}),
	jsonscan.M("outcome", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Outcome, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			return jsonscan.AppendStr(jsonscan.Key(b, "outcome"), c.Outcome), true
		}),
	jsonscan.M("detail", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Detail, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) { return jsonscan.AppendOptStr(b, "detail", c.Detail), true }),
	jsonscan.M("state", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.State, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) { return jsonscan.AppendOptStr(b, "state", c.State), true }),
	jsonscan.M("exit_code", func(s *jsonscan.Scanner, c *cellIO, _ int) bool {
		n, ok := s.Integer()
		c.ExitCode = &n
		return ok
	}, func(b []byte, c *cellIO) ([]byte, bool) {
		if c.ExitCode == nil {
			return b, true
		}
		return strconv.AppendInt(jsonscan.Key(b, "exit_code"), int64(*c.ExitCode), 10), true
	}),
	jsonscan.M("image", func(s *jsonscan.Scanner, c *cellIO, depth int) bool { return imageMembers.Read(s, &c.Image, depth) },
		func(b []byte, c *cellIO) ([]byte, bool) {
			return imageMembers.Append(jsonscan.Key(b, "image"), &c.Image)
		}),
	jsonscan.M("no_provenance", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.NoProvenance, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			return jsonscan.AppendOptStr(b, "no_provenance", c.NoProvenance), true
		}),
	jsonscan.M("started", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Started, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) { return jsonscan.AppendOptStr(b, "started", c.Started), true }),
	jsonscan.M("cases", func(s *jsonscan.Scanner, c *cellIO, depth int) (ok bool) {
		c.Cases, ok = c.sc.ReadCaseList(s, depth)
		return
	},
		func(b []byte, c *cellIO) ([]byte, bool) {
			if len(c.Cases) == 0 {
				return b, true
			}
			return c.cases.Append(jsonscan.Key(b, "cases"), c.Cases)
		}),
	jsonscan.M("evidence", func(s *jsonscan.Scanner, c *cellIO, depth int) (ok bool) { c.Evidence, ok = s.StrList(depth); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			if len(c.Evidence) == 0 {
				return b, true
			}
			return jsonscan.AppendStrList(jsonscan.Key(b, "evidence"), c.Evidence), true
		}),
	jsonscan.M("class", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Class, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) { return jsonscan.AppendOptStr(b, "class", c.Class), true }),
	jsonscan.M("nodes", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Nodes, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) { return jsonscan.AppendOptStr(b, "nodes", c.Nodes), true }),
	jsonscan.M("cluster", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Cluster, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) { return jsonscan.AppendOptStr(b, "cluster", c.Cluster), true }),
	jsonscan.M("verdicts_only", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.VerdictsOnly, ok = s.Boolean(); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			if !c.VerdictsOnly {
				return b, true
			}
			return append(jsonscan.Key(b, "verdicts_only"), "true"...), true
		}),
	jsonscan.M("hardware", func(s *jsonscan.Scanner, c *cellIO, _ int) bool {
		if s.Peek() != '{' {
			return false
		}
		from := s.Pos()
		return s.SkipValue() && json.Unmarshal(s.Bytes(from, s.Pos()), &c.Hardware) == nil
	}, func(b []byte, c *cellIO) ([]byte, bool) {
		if c.Hardware == nil {
			return b, true
		}
		hw, err := json.Marshal(c.Hardware)
		return append(jsonscan.Key(b, "hardware"), hw...), err == nil
	}),
	jsonscan.M("telemetry", func(s *jsonscan.Scanner, c *cellIO, _ int) bool {
		if s.Peek() != '{' {
			return false
		}
		from := s.Pos()
		return s.SkipValue() && json.Unmarshal(s.Bytes(from, s.Pos()), &c.Telemetry) == nil
	}, func(b []byte, c *cellIO) ([]byte, bool) {
		if c.Telemetry == nil {
			return b, true
		}
		t, err := json.Marshal(c.Telemetry)
		return append(jsonscan.Key(b, "telemetry"), t...), err == nil
	}),
	jsonscan.M("gpu", func(s *jsonscan.Scanner, c *cellIO, _ int) bool {
		if s.Peek() != '{' {
			return false
		}
		from := s.Pos()
		return s.SkipValue() && json.Unmarshal(s.Bytes(from, s.Pos()), &c.GPU) == nil
	}, func(b []byte, c *cellIO) ([]byte, bool) {
		if c.GPU == nil {
			return b, true
		}
		g, err := json.Marshal(c.GPU)
		return append(jsonscan.Key(b, "gpu"), g...), err == nil
	}),
	jsonscan.M("attempts", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Attempts, ok = s.Integer(); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			if c.Attempts == 0 {
				return b, true
			}
			return strconv.AppendInt(jsonscan.Key(b, "attempts"), int64(c.Attempts), 10), true
		}),
	jsonscan.M("earlier", func(s *jsonscan.Scanner, c *cellIO, depth int) bool {
		c.Earlier = []Attempt{}
		return s.Elements(depth, func(depth int) bool {
			c.Earlier = append(c.Earlier, Attempt{})
			return attemptMembers.Read(s, &c.Earlier[len(c.Earlier)-1], depth)
		})
	}, func(b []byte, c *cellIO) ([]byte, bool) {
		if len(c.Earlier) == 0 {
			return b, true
		}
		b = append(jsonscan.Key(b, "earlier"), '[')
		for i := range c.Earlier {
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = attemptMembers.Append(b, &c.Earlier[i])
		}
		return append(b, ']'), true
	}),
	jsonscan.M("cache", func(s *jsonscan.Scanner, c *cellIO, _ int) bool {
		if s.Peek() != '[' {
			return false
		}
		from := s.Pos()
		return s.SkipValue() && json.Unmarshal(s.Bytes(from, s.Pos()), &c.Cache) == nil
	}, func(b []byte, c *cellIO) ([]byte, bool) {
		if len(c.Cache) == 0 {
			return b, true
		}
		j, err := json.Marshal(c.Cache)
		return append(jsonscan.Key(b, "cache"), j...), err == nil
	}),
	jsonscan.M("emulated", func(s *jsonscan.Scanner, c *cellIO, _ int) (ok bool) { c.Emulated, ok = s.Str(); return },
		func(b []byte, c *cellIO) ([]byte, bool) {
			return jsonscan.AppendOptStr(b, "emulated", c.Emulated), true
		}),
	jsonscan.M("gpu_health", func(s *jsonscan.Scanner, c *cellIO, _ int) bool {
		return readJSON(s, &c.Health)
	}, func(b []byte, c *cellIO) ([]byte, bool) {
		return appendJSON(b, "gpu_health", c.Health)
	}),
	jsonscan.M("profile", func(s *jsonscan.Scanner, c *cellIO, _ int) bool {
		return readJSON(s, &c.Profile)
	}, func(b []byte, c *cellIO) ([]byte, bool) {
		return appendJSON(b, "profile", c.Profile)
	}),
}

// readJSON reads an object member through encoding/json.
func readJSON[T any](s *jsonscan.Scanner, v **T) bool {
	if s.Peek() != '{' {
		return false
	}
	from := s.Pos()
	return s.SkipValue() && json.Unmarshal(s.Bytes(from, s.Pos()), v) == nil
}

// appendJSON appends member key, v as encoding/json writes it; nothing
// when v is nil.
func appendJSON[T any](b []byte, key string, v *T) ([]byte, bool) {
	if v == nil {
		return b, true
	}
	j, err := json.Marshal(v)
	return append(jsonscan.Key(b, key), j...), err == nil
}

// imageMembers are a cell's image's members; the source revisions are
// their own format, which encoding/json reads and writes.
var imageMembers = jsonscan.Members[result.Image]{
	jsonscan.M("ref", func(s *jsonscan.Scanner, im *result.Image, _ int) (ok bool) { im.Ref, ok = s.Str(); return },
		func(b []byte, im *result.Image) ([]byte, bool) { return jsonscan.AppendOptStr(b, "ref", im.Ref), true }),
	jsonscan.M("digest", func(s *jsonscan.Scanner, im *result.Image, _ int) (ok bool) { im.Digest, ok = s.Str(); return },
		func(b []byte, im *result.Image) ([]byte, bool) {
			return jsonscan.AppendOptStr(b, "digest", im.Digest), true
		}),
	jsonscan.M("source_revisions", func(s *jsonscan.Scanner, im *result.Image, _ int) bool {
		if s.Peek() != '{' {
			return false
		}
		from := s.Pos()
		return s.SkipValue() && json.Unmarshal(s.Bytes(from, s.Pos()), &im.SourceRevisions) == nil
	}, func(b []byte, im *result.Image) ([]byte, bool) {
		if im.SourceRevisions == nil {
			return b, true
		}
		sr, err := json.Marshal(im.SourceRevisions)
		return append(jsonscan.Key(b, "source_revisions"), sr...), err == nil
	}),
}

// attemptMembers are an earlier attempt's members.
var attemptMembers = jsonscan.Members[Attempt]{
	jsonscan.M("state", func(s *jsonscan.Scanner, a *Attempt, _ int) (ok bool) { a.State, ok = s.Str(); return },
		func(b []byte, a *Attempt) ([]byte, bool) {
			return jsonscan.AppendStr(jsonscan.Key(b, "state"), a.State), true
		}),
	jsonscan.M("nodes", func(s *jsonscan.Scanner, a *Attempt, _ int) (ok bool) { a.Nodes, ok = s.Str(); return },
		func(b []byte, a *Attempt) ([]byte, bool) { return jsonscan.AppendOptStr(b, "nodes", a.Nodes), true }),
	jsonscan.M("class", func(s *jsonscan.Scanner, a *Attempt, _ int) (ok bool) { a.Class, ok = s.Str(); return },
		func(b []byte, a *Attempt) ([]byte, bool) {
			return jsonscan.AppendStr(jsonscan.Key(b, "class"), a.Class), true
		}),
	jsonscan.M("gpu_fault", func(s *jsonscan.Scanner, a *Attempt, _ int) bool { return readJSON(s, &a.GPUFault) },
		func(b []byte, a *Attempt) ([]byte, bool) { return appendJSON(b, "gpu_fault", a.GPUFault) }),
}

// decodeCell is json.Unmarshal of a CellResult for the cells WriteRun
// writes: every member a known one, spelled as written, of its own type.
// Anything else (another spelling encoding/json would also match, null,
// a number where an int goes that is not a plain integer, data after the
// object) gives up with ok false.
func decodeCell(b []byte, sc *result.Scratch) (CellResult, bool) {
	var cr CellResult
	s := jsonscan.New(b, sc.Interner())
	ok := cellMembers.Read(&s, &cellIO{CellResult: &cr, sc: sc}, 0)
	return cr, ok && s.Done()
}

// appendCell appends json.Marshal(c) to b, without reflection: the cells
// are nearly all of results.json. Field order, omitempty, map key order,
// string escaping and number formats are encoding/json's
// (TestAppendCellAsMarshal, FuzzAppendCell, TestCellCodecCoversEveryField);
// what it cannot write as encoding/json would (a number that is not
// finite) it leaves to json.Marshal, which says why.
func appendCell(b []byte, c *CellResult) ([]byte, error) {
	return new(cellWriter).append(b, c)
}

// cellWriter is appendCell for a writer of many cells, reusing what the
// member list's writers are given.
type cellWriter struct{ io cellIO }

func (w *cellWriter) append(b []byte, c *CellResult) ([]byte, error) {
	w.io.CellResult = c
	out, ok := cellMembers.Append(b, &w.io)
	w.io.CellResult = nil
	if !ok {
		return appendMarshal(b, c)
	}
	return out, nil
}

// appendMarshal appends json.Marshal(v).
func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}
