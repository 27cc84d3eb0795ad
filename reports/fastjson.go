package reports

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// fastDecode is decodeJSON for the common case, a well-formed document: a
// byte scanner that builds the same tree (the same maps, slices, strings,
// json.Number, bools and nils) several times faster than json.Decoder's
// tokens. It gives up (ok false) on anything decodeJSON would refuse or
// must explain: a syntax error, a duplicate key, a number out of range,
// nesting past maxJSONDepth, data after the document; decodeJSON then
// decides and says where. FuzzFastDecode holds the two to the same trees.
func fastDecode(b []byte) (v any, ok bool) {
	s := scanner{b: b}
	v, ok = s.value(0)
	if !ok {
		return nil, false
	}
	s.space()
	return v, s.i == len(s.b)
}

type scanner struct {
	b  []byte
	i  int
	in *interner // for fastResult's strings; nil: every string is new
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value(depth int) (any, bool) {
	s.space()
	if s.i >= len(s.b) {
		return nil, false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return nil, false
		}
		return s.object(depth + 1)
	case c == '[':
		if depth >= maxJSONDepth {
			return nil, false
		}
		return s.array(depth + 1)
	case c == '"':
		return s.string()
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	}
	return nil, false
}

func (s *scanner) literal(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// skip consumes c, after blanks, when it comes next.
func (s *scanner) skip(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// next reads what follows an element of an object or array: ',' (more),
// the closing byte (done), or anything else (not JSON: ok false).
func (s *scanner) next(closing byte) (more, ok bool) {
	if s.skip(',') {
		return true, true
	}
	return false, s.skip(closing)
}

func (s *scanner) object(depth int) (any, bool) {
	s.i++ // {
	m := map[string]any{}
	if s.skip('}') {
		return m, true
	}
	for more := true; more; {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return nil, false
		}
		k, ok := s.string()
		if !ok || !s.skip(':') {
			return nil, false
		}
		v, ok := s.value(depth)
		key := k.(string)
		if _, dup := m[key]; !ok || dup {
			return nil, false
		}
		m[key] = v
		if more, ok = s.next('}'); !ok {
			return nil, false
		}
	}
	return m, true
}

func (s *scanner) array(depth int) (any, bool) {
	s.i++ // [
	a := []any{}
	if s.skip(']') {
		return a, true
	}
	for more := true; more; {
		v, ok := s.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok = s.next(']'); !ok {
			return nil, false
		}
	}
	return a, true
}

// string reads a string literal. One without escapes and with valid UTF-8
// is copied as it is; any other goes through encoding/json, so escapes,
// surrogates and invalid bytes come out exactly as decodeJSON has them.
func (s *scanner) string() (any, bool) {
	start := s.i
	s.i++
	plain := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if plain {
				return string(s.b[start+1 : s.i-1]), true
			}
			var out string
			if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
				return nil, false
			}
			return out, true
		case c == '\\':
			plain = false
			s.i += 2
			continue
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			if r, size := utf8.DecodeRune(s.b[s.i:]); r == utf8.RuneError && size == 1 {
				plain = false
			} else {
				s.i += size
				continue
			}
		}
		s.i++
	}
	return nil, false
}

// number reads a JSON number (RFC 8259 grammar) as a json.Number that
// fits a 64-bit float.
func (s *scanner) number() (any, bool) {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return nil, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	n := string(s.b[start:s.i])
	if _, err := strconv.ParseFloat(n, 64); err != nil {
		return nil, false
	}
	return json.Number(n), true
}
