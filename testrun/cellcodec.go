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

// scanner reads results.json's cells with the scratch of result.json's
// readers: the same interner, and the case lists read through it.
type scanner struct {
	jsonscan.Scanner
	*result.Scratch
}

func newScanner(b []byte, sc *result.Scratch) scanner {
	return scanner{Scanner: jsonscan.New(b, sc.Interner()), Scratch: sc}
}

// cellDecoder decodes one cell of results.json, as json.Unmarshal would,
// with its own interner: one per goroutine.
func cellDecoder() func([]byte, *CellResult) error {
	sc := &result.Scratch{}
	return func(b []byte, c *CellResult) error {
		if cr, ok := decodeCell(b, sc); ok {
			*c = cr
			return nil
		}
		return json.Unmarshal(b, c)
	}
}

// decodeCell is json.Unmarshal of a CellResult for the cells WriteRun
// writes: every member a known one, spelled as written, of its own type,
// once. Anything else (another spelling encoding/json would also match,
// null, a number where an int goes that is not a plain integer, data
// after the object) gives up with ok false.
func decodeCell(b []byte, sc *result.Scratch) (cr CellResult, ok bool) {
	s := newScanner(b, sc)
	ok = s.Fields(0, func(key string, depth int) bool {
		var ok bool
		switch key {
		case "cell_id":
			cr.CellID, ok = s.Str()
		case "name":
			cr.Name, ok = s.Str()
		case "params":
			cr.Params, ok = s.StrMap(depth)
		case "planned_cases":
			cr.Planned, ok = s.StrList(depth)
		case "outcome":
			cr.Outcome, ok = s.Str()
		case "detail":
			cr.Detail, ok = s.Str()
		case "state":
			cr.State, ok = s.Str()
		case "exit_code":
			var n int
			n, ok = s.Integer()
			cr.ExitCode = &n
		case "image":
			ok = s.cellImage(depth, &cr.Image)
		case "no_provenance":
			cr.NoProvenance, ok = s.Str()
		case "started":
			cr.Started, ok = s.Str()
		case "cases":
			cr.Cases, ok = s.Scratch.ReadCaseList(&s.Scanner, depth)
		case "evidence":
			cr.Evidence, ok = s.StrList(depth)
		case "class":
			cr.Class, ok = s.Str()
		case "nodes":
			cr.Nodes, ok = s.Str()
		case "cluster":
			cr.Cluster, ok = s.Str()
		case "verdicts_only":
			cr.VerdictsOnly, ok = s.Boolean()
		case "attempts":
			cr.Attempts, ok = s.Integer()
		case "earlier":
			cr.Earlier, ok = s.attemptList(depth)
		}
		return ok
	})
	return cr, ok && s.Done()
}

func (s *scanner) cellImage(depth int, im *result.Image) bool {
	return s.Fields(depth, func(key string, depth int) bool {
		var ok bool
		switch key {
		case "ref":
			im.Ref, ok = s.Str()
		case "digest":
			im.Digest, ok = s.Str()
		case "source_revisions":
			// Its own format: encoding/json decodes it.
			if s.Peek() != '{' {
				return false
			}
			from := s.Pos()
			ok = s.SkipValue() && json.Unmarshal(s.Bytes(from, s.Pos()), &im.SourceRevisions) == nil
		}
		return ok
	})
}

func (s *scanner) attemptList(depth int) ([]Attempt, bool) {
	as := []Attempt{}
	ok := s.Elements(depth, func(depth int) bool {
		var a Attempt
		ok := s.Fields(depth, func(key string, _ int) bool {
			var ok bool
			switch key {
			case "state":
				a.State, ok = s.Str()
			case "nodes":
				a.Nodes, ok = s.Str()
			case "class":
				a.Class, ok = s.Str()
			}
			return ok
		})
		as = append(as, a)
		return ok
	})
	return as, ok
}

// appendCell appends json.Marshal(c) to b, without reflection: the cells
// are nearly all of results.json. Field order, omitempty, map key order,
// string escaping and number formats are encoding/json's
// (TestAppendCellAsMarshal, FuzzAppendCell, TestCellCodecCoversEveryField);
// what it cannot write as encoding/json would (a number that is not
// finite) it leaves to json.Marshal, which says why.
func appendCell(b []byte, c *CellResult) ([]byte, error) {
	start := len(b)
	b = append(b, `{"cell_id":`...)
	b = jsonscan.AppendStr(b, c.CellID)
	b = append(b, `,"name":`...)
	b = jsonscan.AppendStr(b, c.Name)
	b = append(b, `,"params":`...)
	b = jsonscan.AppendStrMap(b, c.Params)
	b = append(b, `,"planned_cases":`...)
	b = jsonscan.AppendStrList(b, c.Planned)
	b = append(b, `,"outcome":`...)
	b = jsonscan.AppendStr(b, c.Outcome)
	b = jsonscan.AppendOptStr(b, "detail", c.Detail)
	b = jsonscan.AppendOptStr(b, "state", c.State)
	if c.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*c.ExitCode), 10)
	}
	b = append(b, `,"image":`...)
	b, err := appendImage(b, &c.Image)
	if err != nil {
		return b[:start], err
	}
	b = jsonscan.AppendOptStr(b, "no_provenance", c.NoProvenance)
	b = jsonscan.AppendOptStr(b, "started", c.Started)
	if len(c.Cases) > 0 {
		b = append(b, `,"cases":[`...)
		for i := range c.Cases {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = result.AppendCase(b, &c.Cases[i]); !ok {
				return appendMarshal(b[:start], c)
			}
		}
		b = append(b, ']')
	}
	if len(c.Evidence) > 0 {
		b = append(b, `,"evidence":`...)
		b = jsonscan.AppendStrList(b, c.Evidence)
	}
	b = jsonscan.AppendOptStr(b, "class", c.Class)
	b = jsonscan.AppendOptStr(b, "nodes", c.Nodes)
	b = jsonscan.AppendOptStr(b, "cluster", c.Cluster)
	if c.VerdictsOnly {
		b = append(b, `,"verdicts_only":true`...)
	}
	if c.Attempts != 0 {
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(c.Attempts), 10)
	}
	if len(c.Earlier) > 0 {
		b = append(b, `,"earlier":`...)
		b = appendAttempts(b, c.Earlier)
	}
	return append(b, '}'), nil
}

// appendImage appends a cell's image: ref and digest unless empty, and
// its source revisions as encoding/json writes them.
func appendImage(b []byte, im *result.Image) ([]byte, error) {
	b = append(b, '{')
	comma := false
	for _, f := range [...]struct{ name, v string }{{"ref", im.Ref}, {"digest", im.Digest}} {
		if f.v != "" {
			if comma {
				b = append(b, ',')
			}
			b = jsonscan.AppendStr(b, f.name)
			b = append(b, ':')
			b = jsonscan.AppendStr(b, f.v)
			comma = true
		}
	}
	if im.SourceRevisions != nil {
		sr, err := json.Marshal(im.SourceRevisions)
		if err != nil {
			return b, err
		}
		if comma {
			b = append(b, ',')
		}
		b = append(append(b, `"source_revisions":`...), sr...)
	}
	b = append(b, '}')
	return b, nil
}

// appendAttempts appends how a cell's earlier attempts ended.
func appendAttempts(b []byte, as []Attempt) []byte {
	b = append(b, '[')
	for i, a := range as {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"state":`...)
		b = jsonscan.AppendStr(b, a.State)
		b = jsonscan.AppendOptStr(b, "nodes", a.Nodes)
		b = append(b, `,"class":`...)
		b = jsonscan.AppendStr(b, a.Class)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendMarshal appends json.Marshal(v).
func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}
