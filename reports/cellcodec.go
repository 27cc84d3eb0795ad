package reports

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
)

// results.json is kvsweep's own file, but it is read back from a sweep
// directory, so it is read as any input is: decodeCell below takes the
// cells as WriteRun writes them, and whatever it does not expect goes to
// encoding/json, whose answer is the reference (FuzzDecodeCell).

// cellDecoder decodes one cell of results.json, as json.Unmarshal would,
// with its own interner: one per goroutine.
func cellDecoder() func([]byte, *CellResult) error {
	sc := &scratch{}
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
func decodeCell(b []byte, sc *scratch) (cr CellResult, ok bool) {
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
			cr.Cases, ok = s.caseList(depth)
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

func (s *scanner) cellImage(depth int, im *Image) bool {
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

func (s *scanner) caseList(depth int) ([]Case, bool) {
	return s.readCases(depth, func(depth int, c *Case) bool {
		return s.Fields(depth, func(key string, depth int) bool {
			var ok bool
			switch key {
			case "id":
				c.ID, ok = s.Str()
			case "verdict":
				c.Verdict, ok = s.Str()
			case "duration_s":
				c.DurationS, ok = s.Num()
			case "message":
				c.Message, ok = s.Str()
			case "metrics":
				s.metricBuf = s.metricBuf[:0]
				ok = s.Members(depth, func(name string, depth int) bool {
					m := Metric{Name: name}
					ok := s.Fields(depth, func(key string, _ int) bool {
						var ok bool
						switch key {
						case "value":
							m.Value, ok = s.Num()
						case "unit":
							m.Unit, ok = s.Str()
						case "direction":
							m.Direction, ok = s.Str()
						}
						return ok
					})
					s.metricBuf = append(s.metricBuf, m)
					return ok
				})
				if c.Metrics = sortedMetrics(s.metricBuf); c.Metrics == nil {
					c.Metrics = Metrics{} // as encoding/json decodes {}
				}
			}
			return ok
		})
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
	b = appendStr(b, c.CellID)
	b = append(b, `,"name":`...)
	b = appendStr(b, c.Name)
	b = append(b, `,"params":`...)
	b = appendStrMap(b, c.Params)
	b = append(b, `,"planned_cases":`...)
	b = appendStrList(b, c.Planned)
	b = append(b, `,"outcome":`...)
	b = appendStr(b, c.Outcome)
	b = appendOptStr(b, "detail", c.Detail)
	b = appendOptStr(b, "state", c.State)
	if c.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*c.ExitCode), 10)
	}
	b = append(b, `,"image":{`...)
	comma := false
	for _, f := range [...]struct{ name, v string }{{"ref", c.Image.Ref}, {"digest", c.Image.Digest}} {
		if f.v != "" {
			if comma {
				b = append(b, ',')
			}
			b = appendStr(b, f.name)
			b = append(b, ':')
			b = appendStr(b, f.v)
			comma = true
		}
	}
	if c.Image.SourceRevisions != nil {
		sr, err := json.Marshal(c.Image.SourceRevisions)
		if err != nil {
			return b[:start], err
		}
		if comma {
			b = append(b, ',')
		}
		b = append(append(b, `"source_revisions":`...), sr...)
	}
	b = append(b, '}')
	b = appendOptStr(b, "no_provenance", c.NoProvenance)
	b = appendOptStr(b, "started", c.Started)
	if len(c.Cases) > 0 {
		b = append(b, `,"cases":[`...)
		for i := range c.Cases {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCase(b, &c.Cases[i]); !ok {
				return appendMarshal(b[:start], c)
			}
		}
		b = append(b, ']')
	}
	if len(c.Evidence) > 0 {
		b = append(b, `,"evidence":`...)
		b = appendStrList(b, c.Evidence)
	}
	b = appendOptStr(b, "class", c.Class)
	b = appendOptStr(b, "nodes", c.Nodes)
	b = appendOptStr(b, "cluster", c.Cluster)
	if c.VerdictsOnly {
		b = append(b, `,"verdicts_only":true`...)
	}
	if c.Attempts != 0 {
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(c.Attempts), 10)
	}
	if len(c.Earlier) > 0 {
		b = append(b, `,"earlier":[`...)
		for i, a := range c.Earlier {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"state":`...)
			b = appendStr(b, a.State)
			b = appendOptStr(b, "nodes", a.Nodes)
			b = append(b, `,"class":`...)
			b = appendStr(b, a.Class)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendMarshal appends json.Marshal(v).
func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendCase appends a Case; ok is false for a number JSON cannot hold.
func appendCase(b []byte, c *Case) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = appendStr(b, c.ID)
	b = append(b, `,"verdict":`...)
	b = appendStr(b, c.Verdict)
	if c.DurationS != 0 {
		var ok bool
		b = append(b, `,"duration_s":`...)
		if b, ok = appendFloat(b, c.DurationS); !ok {
			return b, false
		}
	}
	b = appendOptStr(b, "message", c.Message)
	if len(c.Metrics) > 0 {
		b = append(b, `,"metrics":{`...)
		for i, m := range c.Metrics {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStr(b, m.Name)
			b = append(b, `:{"value":`...)
			var ok bool
			if b, ok = appendFloat(b, m.Value); !ok {
				return b, false
			}
			b = appendOptStr(b, "unit", m.Unit)
			b = appendOptStr(b, "direction", m.Direction)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendOptStr appends ,"name":"v" unless v is empty (omitempty).
func appendOptStr(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(append(append(b, ',', '"'), name...), '"', ':')
	return appendStr(b, v)
}

func appendStrList(b []byte, vs []string) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStr(b, v)
	}
	return append(b, ']')
}

func appendStrMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStr(b, k)
		b = append(b, ':')
		b = appendStr(b, m[k])
	}
	return append(b, '}')
}

// appendStr appends s as encoding/json writes a string: printable ASCII
// other than " \ < > & as it is, anything else through json.Marshal.
func appendStr(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendFloat appends f as encoding/json writes a float64; ok is false
// for NaN and the infinities, which it refuses.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 is written 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
