package result

import "github.com/kvsweep/kvsweep/internal/jsonscan"

// A case list is read and written as encoding/json would, for results.json,
// whose cells hold them (see its cell codec).

// Interner is the interner of the strings the scanners of this scratch
// read: a reader of another document that holds cases scans with it.
func (sc *Scratch) Interner() *jsonscan.Interner { return &sc.in }

// ReadCaseList reads, at s, a case list as encoding/json decodes a []Case,
// through sc's scratch: empty (not nil) when it has none.
func (sc *Scratch) ReadCaseList(s *jsonscan.Scanner, depth int) ([]Case, bool) {
	rs := scanner{Scanner: *s, Scratch: sc}
	cases, ok := rs.caseList(depth)
	*s = rs.Scanner
	return cases, ok
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

// AppendCase appends a Case; ok is false for a number JSON cannot hold.
func AppendCase(b []byte, c *Case) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = jsonscan.AppendStr(b, c.ID)
	b = append(b, `,"verdict":`...)
	b = jsonscan.AppendStr(b, c.Verdict)
	if c.DurationS != 0 {
		var ok bool
		b = append(b, `,"duration_s":`...)
		if b, ok = jsonscan.AppendFloat(b, c.DurationS); !ok {
			return b, false
		}
	}
	b = jsonscan.AppendOptStr(b, "message", c.Message)
	if len(c.Metrics) > 0 {
		b = append(b, `,"metrics":{`...)
		for i, m := range c.Metrics {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonscan.AppendStr(b, m.Name)
			b = append(b, `:{"value":`...)
			var ok bool
			if b, ok = jsonscan.AppendFloat(b, m.Value); !ok {
				return b, false
			}
			b = jsonscan.AppendOptStr(b, "unit", m.Unit)
			b = jsonscan.AppendOptStr(b, "direction", m.Direction)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}
