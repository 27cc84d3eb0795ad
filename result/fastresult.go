package result

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kvsweep/kvsweep/provenance"
)

// fastResult is ParseResult for the common case: one pass over the bytes
// that checks every constraint of schema/result.v1.json as it reads and
// fills the Result directly, with no generic tree and no schema walk. It
// accepts only what the schema accepts and gives up (ok false) on the
// rest, and on anything unusual it would rather not decide (a number that
// is an integer only by value, a leap second, a version written 1.0);
// ParseResult then takes the reference path (decodeJSON, the JSON Schema
// validator, fromDoc), which decides and says what is wrong and where.
// FuzzFastResult holds the two to the same answers, and
// TestFastResultSchemaUnchanged makes a change of the schema come here.
func fastResult(b []byte, sc *Scratch) (r *Result, ok bool) {
	s := newScanner(b, sc)
	r = &Result{SchemaVersion: SchemaVersion}
	var version, cell, cases bool
	ok = s.Fields(0, func(key string, depth int) bool {
		switch key {
		case "schema_version":
			version = true
			s.Space()
			return s.Literal("1")
		case "sweep_id":
			r.SweepID, ok = s.Str()
			return ok
		case "cell_id":
			cell = true
			r.CellID, ok = s.Str()
			return ok && isCellID(r.CellID)
		case "params":
			return s.params(depth, r)
		case "image":
			return s.image(depth, r)
		case "slurm":
			return s.slurm(depth, r)
		case "started", "finished":
			v, ok := s.Str()
			if !ok || !isDateTime(v) {
				return false
			}
			if key == "started" {
				r.Started = v
			} else {
				r.Finished = v
			}
			return true
		case "cases":
			cases = true
			return s.cases(depth, r)
		case "evidence":
			return s.evidence(depth, r)
		}
		_, ok := s.Value(depth)
		return ok
	})
	if !ok || !version || !cell || !cases {
		return nil, false
	}
	return r, s.Done()
}

// params: additionalProperties of type string, number or boolean.
func (s *scanner) params(depth int, r *Result) bool {
	r.Params = map[string]any{}
	return s.Members(depth, func(key string, _ int) bool {
		switch c := s.Peek(); {
		case c == '"':
			v, ok := s.Str()
			r.Params[key] = v
			return ok
		case c == 't':
			r.Params[key] = true
			return s.Literal("true")
		case c == 'f':
			r.Params[key] = false
			return s.Literal("false")
		}
		f, ok := s.Num()
		r.Params[key] = f
		return ok
	})
}

func (s *scanner) image(depth int, r *Result) bool {
	im := &Image{}
	r.Image = im
	return s.Fields(depth, func(key string, depth int) bool {
		var ok bool
		switch key {
		case "ref":
			im.Ref, ok = s.Str()
			return ok
		case "digest":
			im.Digest, ok = s.Str()
			return ok && isDigestOrEmpty(im.Digest)
		case "source_revisions":
			if s.Peek() != '{' {
				return false
			}
			sr, ok := s.Value(depth)
			if !ok {
				return false
			}
			// As fromDoc does: the harness's copy of the image's record,
			// in its one format.
			if b, err := json.Marshal(sr); err == nil {
				im.SourceRevisions, _ = provenance.Parse(b)
			}
			return true
		}
		_, ok = s.Value(depth)
		return ok
	})
}

func (s *scanner) slurm(depth int, r *Result) bool {
	sl := &SlurmInfo{}
	r.Slurm = sl
	return s.Fields(depth, func(key string, depth int) bool {
		var ok bool
		switch key {
		case "job_id":
			sl.JobID, ok = s.Str()
		case "array_job_id":
			sl.ArrayJobID, ok = s.Str()
		case "array_task_id":
			sl.ArrayTaskID, ok = s.Str()
		case "nodes":
			sl.Nodes, ok = s.Str()
		case "partition":
			sl.Partition, ok = s.Str()
		case "state":
			sl.State, ok = s.Str()
		case "exit_code":
			// "integer": a plain one only (3.0 or 1e2 are the reference's),
			// small enough for the reference's float64 to hold exactly.
			code, ok := s.Integer()
			if !ok || code > 1<<53 || code < -1<<53 {
				return false
			}
			sl.ExitCode = &code
			return true
		default:
			_, ok = s.Value(depth)
		}
		return ok
	})
}

func (s *scanner) cases(depth int, r *Result) bool {
	var ok bool
	r.Cases, ok = s.readCases(depth, func(depth int, c *Case) bool {
		var id, verdict bool
		ok := s.Fields(depth, func(key string, depth int) bool {
			var ok bool
			switch key {
			case "id":
				id = true
				c.ID, ok = s.Str()
				return ok && isCaseID(c.ID)
			case "verdict":
				verdict = true
				c.Verdict, ok = s.Str()
				return ok && (c.Verdict == Pass || c.Verdict == Fail || c.Verdict == Skip || c.Verdict == Error)
			case "duration_s":
				c.DurationS, ok = s.Num()
				return ok && c.DurationS >= 0
			case "message":
				c.Message, ok = s.Str()
				return ok
			case "metrics":
				return s.metrics(depth, c)
			}
			_, ok = s.Value(depth)
			return ok
		})
		return ok && id && verdict
	})
	return ok
}

// metrics: objects with a number value, a string unit and a direction,
// and nothing else (additionalProperties false).
func (s *scanner) metrics(depth int, c *Case) bool {
	s.metricBuf = s.metricBuf[:0]
	ok := s.Members(depth, func(name string, depth int) bool {
		m := Metric{Name: name}
		var value bool
		ok := s.Fields(depth, func(key string, _ int) bool {
			var ok bool
			switch key {
			case "value":
				value = true
				m.Value, ok = s.Num()
			case "unit":
				m.Unit, ok = s.Str()
			case "direction":
				m.Direction, ok = s.Str()
				ok = ok && (m.Direction == "lower" || m.Direction == "higher")
			}
			return ok
		})
		s.metricBuf = append(s.metricBuf, m)
		return ok && value
	})
	c.Metrics = sortedMetrics(s.metricBuf)
	return ok
}

// evidence: strings of at least one character, relative, with no ".."
// component.
func (s *scanner) evidence(depth int, r *Result) bool {
	return s.Elements(depth, func(int) bool {
		e, ok := s.Str()
		if !ok || utf8.RuneCountInString(e) < 1 || strings.HasPrefix(e, "/") || slices.Contains(strings.Split(e, "/"), "..") {
			return false
		}
		r.Evidence = append(r.Evidence, e)
		return true
	})
}

// isCellID is the pattern ^[0-9a-f]{12}$.
func isCellID(v string) bool {
	return len(v) == 12 && isLowerHex(v)
}

// isLowerHex says whether v is only 0-9 and a-f.
func isLowerHex(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isDigits says whether v is only 0-9.
func isDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// isCaseID is the pattern ^[A-Za-z0-9_.-]+$.
func isCaseID(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// isDigestOrEmpty is the pattern ^$|^sha256:[0-9a-f]{64}$.
func isDigestOrEmpty(v string) bool {
	if v == "" {
		return true
	}
	hex, ok := strings.CutPrefix(v, "sha256:")
	return ok && len(hex) == 64 && isLowerHex(hex)
}

// isDateTime accepts the RFC 3339 date-times of the form
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM) with a real date and
// seconds below 60: a subset of what the schema's "date-time" format
// accepts; the rest (t, z, a leap second) is the reference's to decide.
func isDateTime(v string) bool {
	if len(v) < 20 || v[10] != 'T' || !isDigits(v[:4]) || !isDigits(v[5:7]) || !isDigits(v[8:10]) {
		return false
	}
	if _, err := time.Parse("2006-01-02", v[:10]); err != nil {
		return false
	}
	t := v[11:]
	if t[2] != ':' || t[5] != ':' || !isDigits(t[:2]) || !isDigits(t[3:5]) || !isDigits(t[6:8]) || t[:2] > "23" || t[3:5] > "59" || t[6:8] > "59" {
		return false
	}
	t = t[8:]
	if frac, ok := strings.CutPrefix(t, "."); ok {
		n := len(frac) - len(strings.TrimLeft(frac, "0123456789"))
		if n == 0 {
			return false
		}
		t = frac[n:]
	}
	if t == "Z" {
		return true
	}
	return len(t) == 6 && (t[0] == '+' || t[0] == '-') && t[3] == ':' && isDigits(t[1:3]) && isDigits(t[4:6]) && t[1:3] <= "23" && t[4:6] <= "59"
}
