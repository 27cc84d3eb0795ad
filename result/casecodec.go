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
	sc.caseBuf = sc.caseBuf[:0]
	ok := s.Elements(depth, func(depth int) bool {
		sc.caseBuf = append(sc.caseBuf, Case{})
		sc.io = caseIO{Case: &sc.caseBuf[len(sc.caseBuf)-1], sc: sc}
		return caseMembers.Read(s, &sc.io, depth)
	})
	cases := make([]Case, len(sc.caseBuf))
	copy(cases, sc.caseBuf)
	clear(sc.caseBuf) // keeps nothing of this document alive
	return cases, ok
}

// caseIO is a case being read or written, with the scratch its metrics
// are read through.
type caseIO struct {
	*Case
	sc *Scratch
}

// caseMembers are Case's members, in field order: the one list its reader
// and writer walk (TestCaseMembers holds it to the struct).
var caseMembers = jsonscan.Members[caseIO]{
	jsonscan.M("id", func(s *jsonscan.Scanner, c *caseIO, _ int) (ok bool) { c.ID, ok = s.Str(); return },
		func(b []byte, c *caseIO) ([]byte, bool) { return jsonscan.AppendStr(jsonscan.Key(b, "id"), c.ID), true }),
	jsonscan.M("verdict", func(s *jsonscan.Scanner, c *caseIO, _ int) (ok bool) { c.Verdict, ok = s.Str(); return },
		func(b []byte, c *caseIO) ([]byte, bool) {
			return jsonscan.AppendStr(jsonscan.Key(b, "verdict"), c.Verdict), true
		}),
	jsonscan.M("duration_s", func(s *jsonscan.Scanner, c *caseIO, _ int) (ok bool) { c.DurationS, ok = s.Num(); return },
		func(b []byte, c *caseIO) ([]byte, bool) {
			if c.DurationS == 0 {
				return b, true
			}
			return jsonscan.AppendFloat(jsonscan.Key(b, "duration_s"), c.DurationS)
		}),
	jsonscan.M("message", func(s *jsonscan.Scanner, c *caseIO, _ int) (ok bool) { c.Message, ok = s.Str(); return },
		func(b []byte, c *caseIO) ([]byte, bool) { return jsonscan.AppendOptStr(b, "message", c.Message), true }),
	jsonscan.M("metrics", func(s *jsonscan.Scanner, c *caseIO, depth int) bool {
		sc := c.sc
		sc.metricBuf = sc.metricBuf[:0]
		ok := s.Members(depth, func(name string, depth int) bool {
			sc.metricBuf = append(sc.metricBuf, Metric{Name: name})
			return metricMembers.Read(s, &sc.metricBuf[len(sc.metricBuf)-1], depth)
		})
		if c.Metrics = sortedMetrics(sc.metricBuf); c.Metrics == nil {
			c.Metrics = Metrics{} // as encoding/json decodes {}
		}
		return ok
	}, func(b []byte, c *caseIO) ([]byte, bool) {
		if len(c.Metrics) == 0 {
			return b, true
		}
		b = append(jsonscan.Key(b, "metrics"), '{')
		for i := range c.Metrics {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			b = append(jsonscan.AppendStr(b, c.Metrics[i].Name), ':')
			if b, ok = metricMembers.Append(b, &c.Metrics[i]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}),
}

// metricMembers are a metric's members; its name is its key in the case's
// metrics.
var metricMembers = jsonscan.Members[Metric]{
	jsonscan.M("value", func(s *jsonscan.Scanner, m *Metric, _ int) (ok bool) { m.Value, ok = s.Num(); return },
		func(b []byte, m *Metric) ([]byte, bool) {
			return jsonscan.AppendFloat(jsonscan.Key(b, "value"), m.Value)
		}),
	jsonscan.M("unit", func(s *jsonscan.Scanner, m *Metric, _ int) (ok bool) { m.Unit, ok = s.Str(); return },
		func(b []byte, m *Metric) ([]byte, bool) { return jsonscan.AppendOptStr(b, "unit", m.Unit), true }),
	jsonscan.M("direction", func(s *jsonscan.Scanner, m *Metric, _ int) (ok bool) { m.Direction, ok = s.Str(); return },
		func(b []byte, m *Metric) ([]byte, bool) {
			return jsonscan.AppendOptStr(b, "direction", m.Direction), true
		}),
}

// CaseWriter appends case lists as encoding/json writes a []Case, reusing
// what the member list's writers are given; one per goroutine.
type CaseWriter struct{ io caseIO }

// Append appends cases; ok is false for a number JSON cannot hold.
func (w *CaseWriter) Append(b []byte, cases []Case) ([]byte, bool) {
	b = append(b, '[')
	for i := range cases {
		if i > 0 {
			b = append(b, ',')
		}
		w.io.Case = &cases[i]
		var ok bool
		if b, ok = caseMembers.Append(b, &w.io); !ok {
			return b, false
		}
	}
	w.io.Case = nil
	return append(b, ']'), true
}
