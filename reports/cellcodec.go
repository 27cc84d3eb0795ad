package reports

import (
	"encoding/json"
	"strconv"
)

// results.json is kvsweep's own file, but it is read back from a sweep
// directory, so it is read as any input is: decodeCell below takes the
// cells as WriteRun writes them, and whatever it does not expect goes to
// encoding/json, whose answer is the reference (FuzzDecodeCell).

// cellDecoder decodes one cell of results.json, as json.Unmarshal would,
// with its own interner: one per goroutine.
func cellDecoder() func([]byte, *CellResult) error {
	in := &interner{}
	return func(b []byte, c *CellResult) error {
		if cr, ok := decodeCell(b, in); ok {
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
func decodeCell(b []byte, in *interner) (cr CellResult, ok bool) {
	s := scanner{b: b, in: in}
	ok = s.members(0, func(key string, depth int) bool {
		var ok bool
		switch key {
		case "cell_id":
			cr.CellID, ok = s.str()
		case "name":
			cr.Name, ok = s.str()
		case "params":
			cr.Params, ok = s.strMap(depth)
		case "planned_cases":
			cr.Planned, ok = s.strList(depth)
		case "outcome":
			cr.Outcome, ok = s.str()
		case "detail":
			cr.Detail, ok = s.str()
		case "state":
			cr.State, ok = s.str()
		case "exit_code":
			var n int
			n, ok = s.integer()
			cr.ExitCode = &n
		case "image":
			ok = s.cellImage(depth, &cr.Image)
		case "no_provenance":
			cr.NoProvenance, ok = s.str()
		case "started":
			cr.Started, ok = s.str()
		case "cases":
			cr.Cases, ok = s.caseList(depth)
		case "evidence":
			cr.Evidence, ok = s.strList(depth)
		case "class":
			cr.Class, ok = s.str()
		case "nodes":
			cr.Nodes, ok = s.str()
		case "cluster":
			cr.Cluster, ok = s.str()
		case "verdicts_only":
			cr.VerdictsOnly, ok = s.boolean()
		case "attempts":
			cr.Attempts, ok = s.integer()
		case "earlier":
			cr.Earlier, ok = s.attemptList(depth)
		}
		return ok
	})
	s.space()
	return cr, ok && s.i == len(s.b)
}

func (s *scanner) cellImage(depth int, im *Image) bool {
	return s.members(depth, func(key string, depth int) bool {
		var ok bool
		switch key {
		case "ref":
			im.Ref, ok = s.str()
		case "digest":
			im.Digest, ok = s.str()
		case "source_revisions":
			// Its own format: encoding/json decodes it.
			s.space()
			from := s.i
			if s.i >= len(s.b) || s.b[s.i] != '{' {
				return false
			}
			if _, ok = s.value(depth); ok {
				ok = json.Unmarshal(s.b[from:s.i], &im.SourceRevisions) == nil && im.SourceRevisions != nil
			}
		}
		return ok
	})
}

func (s *scanner) caseList(depth int) ([]Case, bool) {
	cases := []Case{}
	ok := s.elements(depth, func(depth int) bool {
		var c Case
		ok := s.members(depth, func(key string, depth int) bool {
			var ok bool
			switch key {
			case "id":
				c.ID, ok = s.str()
			case "verdict":
				c.Verdict, ok = s.str()
			case "duration_s":
				c.DurationS, _, ok = s.num()
			case "message":
				c.Message, ok = s.str()
			case "metrics":
				c.Metrics = map[string]Metric{}
				ok = s.members(depth, func(name string, depth int) bool {
					var m Metric
					ok := s.members(depth, func(key string, _ int) bool {
						var ok bool
						switch key {
						case "value":
							m.Value, _, ok = s.num()
						case "unit":
							m.Unit, ok = s.str()
						case "direction":
							m.Direction, ok = s.str()
						}
						return ok
					})
					c.Metrics[name] = m
					return ok
				})
			}
			return ok
		})
		cases = append(cases, c)
		return ok
	})
	return cases, ok
}

func (s *scanner) attemptList(depth int) ([]Attempt, bool) {
	as := []Attempt{}
	ok := s.elements(depth, func(depth int) bool {
		var a Attempt
		ok := s.members(depth, func(key string, _ int) bool {
			var ok bool
			switch key {
			case "state":
				a.State, ok = s.str()
			case "nodes":
				a.Nodes, ok = s.str()
			case "class":
				a.Class, ok = s.str()
			}
			return ok
		})
		as = append(as, a)
		return ok
	})
	return as, ok
}

func (s *scanner) strList(depth int) ([]string, bool) {
	out := []string{}
	ok := s.elements(depth, func(int) bool {
		v, ok := s.str()
		out = append(out, v)
		return ok
	})
	return out, ok
}

func (s *scanner) strMap(depth int) (map[string]string, bool) {
	out := map[string]string{}
	ok := s.members(depth, func(key string, _ int) bool {
		v, ok := s.str()
		out[key] = v
		return ok
	})
	return out, ok
}

// integer reads a plain integer (what encoding/json puts in an int).
func (s *scanner) integer() (int, bool) {
	_, raw, ok := s.num()
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(raw)
	return n, err == nil
}

// boolean reads true or false.
func (s *scanner) boolean() (bool, bool) {
	s.space()
	switch {
	case s.literal("true"):
		return true, true
	case s.literal("false"):
		return false, true
	}
	return false, false
}
