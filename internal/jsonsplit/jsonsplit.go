// Package jsonsplit decodes a JSON object whose bulk is one array member
// (results.json's cells, manifest.json's cells) a span of elements per
// CPU. It finds the elements without decoding them; encoding/json decodes
// the rest of the object and each element, so the result is what
// json.Unmarshal of the whole document gives. Anything unexpected (no such
// member, a document that does not split) says so and the caller decodes
// the document whole, which also says what is wrong with it.
package jsonsplit

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
)

// Unmarshal decodes doc into v, except the array member key, whose
// elements it decodes into the slice *cells, in parallel. ok is false when
// doc did not split or did not decode; v and *cells are then undefined.
func Unmarshal[T any](doc []byte, key string, v any, cells *[]T) (ok bool) {
	return UnmarshalWith(doc, key, v, cells, func() func([]byte, *T) error {
		return func(b []byte, c *T) error { return json.Unmarshal(b, c) }
	})
}

// UnmarshalWith is Unmarshal with the elements decoded by decoders that
// newDecoder makes, one per goroutine; each must give what json.Unmarshal
// gives.
func UnmarshalWith[T any](doc []byte, key string, v any, cells *[]T, newDecoder func() func([]byte, *T) error) (ok bool) {
	head, elems, null, ok := Split(doc, key)
	if !ok || json.Unmarshal(head, v) != nil {
		return false
	}
	if null {
		*cells = nil
		return true
	}
	out := make([]T, len(elems))
	spans := Spans(len(elems), runtime.GOMAXPROCS(0))
	failed := make([]bool, len(spans))
	var wg sync.WaitGroup
	for k, sp := range spans {
		wg.Go(func() {
			decode := newDecoder()
			for i := sp[0]; i < sp[1]; i++ {
				if decode(elems[i], &out[i]) != nil {
					failed[k] = true
					return
				}
			}
		})
	}
	wg.Wait()
	for _, f := range failed {
		if f {
			return false
		}
	}
	*cells = out
	return true
}

// Spans cuts n items into at most k contiguous spans [from, to).
func Spans(n, k int) [][2]int {
	k = max(1, min(k, n))
	spans := make([][2]int, 0, k)
	for i := 0; i < k; i++ {
		spans = append(spans, [2]int{i * n / k, (i + 1) * n / k})
	}
	return spans
}

// Split returns doc, an object, with the value of its member key replaced
// by null, and that value's elements; null says the value was null. ok is
// false unless doc is one object with exactly one member key, an array or
// null. The bytes stepped over are not checked: decoding head and the
// elements does.
func Split(doc []byte, key string) (head []byte, elems [][]byte, null, ok bool) {
	s := scanner{b: doc}
	s.space()
	if !s.skip('{') {
		return nil, nil, false, false
	}
	from, to, found := 0, 0, 0
	if !s.skip('}') {
		for more := true; more; {
			s.space()
			k, ok := s.key()
			if !ok || !s.skip(':') {
				return nil, nil, false, false
			}
			s.space()
			if k != key && strings.EqualFold(k, key) {
				// encoding/json matches names without regard to case:
				// this member would be the array too.
				return nil, nil, false, false
			}
			if k != key {
				if !s.value() {
					return nil, nil, false, false
				}
			} else {
				found++
				from = s.i
				switch {
				case bytes.HasPrefix(doc[s.i:], []byte("null")):
					s.i += 4
					null = true
				default:
					if elems, ok = s.elements(); !ok {
						return nil, nil, false, false
					}
				}
				to = s.i
			}
			if more, ok = s.next('}'); !ok {
				return nil, nil, false, false
			}
		}
	}
	s.space()
	if found != 1 || s.i != len(doc) {
		return nil, nil, false, false
	}
	head = make([]byte, 0, from+4+len(doc)-to)
	head = append(append(append(head, doc[:from]...), "null"...), doc[to:]...)
	return head, elems, null, true
}

type scanner struct {
	b []byte
	i int
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

// skip consumes c, after blanks, when it comes next.
func (s *scanner) skip(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// next reads what follows an element: ',' (more) or the closing byte.
func (s *scanner) next(closing byte) (more, ok bool) {
	if s.skip(',') {
		return true, true
	}
	return false, s.skip(closing)
}

// key reads a member name, decoded.
func (s *scanner) key() (string, bool) {
	from := s.i
	if s.i >= len(s.b) || s.b[s.i] != '"' || !s.str() {
		return "", false
	}
	raw := s.b[from:s.i]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var k string
	if json.Unmarshal(raw, &k) != nil {
		return "", false
	}
	return k, true
}

// str steps over a string literal: from quote to quote (IndexByte finds
// them a word at a time), a quote after an odd run of backslashes being
// escaped.
func (s *scanner) str() bool {
	s.i++ // "
	for {
		q := bytes.IndexByte(s.b[s.i:], '"')
		if q < 0 {
			return false
		}
		s.i += q + 1
		slashes := 0
		for j := s.i - 2; j >= 0 && s.b[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 0 {
			return true
		}
	}
}

// value steps over the value that comes next, minding strings and nesting.
func (s *scanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	from := s.i
	switch s.b[s.i] {
	case '"':
		return s.str()
	case '{', '[':
	default: // a number or a literal
		for ; s.i < len(s.b); s.i++ {
			switch s.b[s.i] {
			case ',', ':', ']', '}', '[', '{', '"', ' ', '\t', '\n', '\r':
				return s.i > from
			}
		}
		return s.i > from
	}
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if !s.str() {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.i++
				return true
			}
		}
		s.i++
	}
	return false
}

// elements steps over the array that comes next and returns its elements.
func (s *scanner) elements() ([][]byte, bool) {
	if !s.skip('[') {
		return nil, false
	}
	var elems [][]byte
	if s.skip(']') {
		return elems, true
	}
	for more := true; more; {
		s.space()
		from := s.i
		if !s.value() {
			return nil, false
		}
		elems = append(elems, s.b[from:s.i])
		var ok bool
		if more, ok = s.next(']'); !ok {
			return nil, false
		}
	}
	return elems, true
}
