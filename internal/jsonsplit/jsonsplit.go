// Package jsonsplit decodes a JSON object whose bulk is one array member
// (results.json's cells, manifest.json's cells) a span of elements per
// CPU. It finds the elements without decoding them; encoding/json decodes
// the rest of the object and each element, so the result is what
// json.Unmarshal of the whole document gives. Anything unexpected (no such
// member, a document that does not split) says so and the caller decodes
// the document whole, which also says what is wrong with it.
package jsonsplit

import (
	"encoding/json"
	"runtime"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
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
	s := jsonscan.New(doc, nil)
	if !s.Skip('{') {
		return nil, nil, false, false
	}
	from, to, found := 0, 0, 0
	if !s.Skip('}') {
		for more := true; more; {
			k, ok := s.Str()
			if !ok || !s.Skip(':') {
				return nil, nil, false, false
			}
			if k != key && strings.EqualFold(k, key) {
				// encoding/json matches names without regard to case:
				// this member would be the array too.
				return nil, nil, false, false
			}
			s.Space()
			if k != key {
				if !s.SkipValue() {
					return nil, nil, false, false
				}
			} else {
				found++
				from = s.Pos()
				if s.Literal("null") {
					null = true
				} else if elems, ok = elements(&s); !ok {
					return nil, nil, false, false
				}
				to = s.Pos()
			}
			if more, ok = s.Next('}'); !ok {
				return nil, nil, false, false
			}
		}
	}
	if found != 1 || !s.Done() {
		return nil, nil, false, false
	}
	head = make([]byte, 0, from+4+len(doc)-to)
	head = append(append(append(head, doc[:from]...), "null"...), doc[to:]...)
	return head, elems, null, true
}

// elements steps over the array that comes next and returns its elements.
func elements(s *jsonscan.Scanner) ([][]byte, bool) {
	if !s.Skip('[') {
		return nil, false
	}
	var elems [][]byte
	if s.Skip(']') {
		return elems, true
	}
	for more := true; more; {
		s.Space()
		from := s.Pos()
		if !s.SkipValue() {
			return nil, false
		}
		elems = append(elems, s.Bytes(from, s.Pos()))
		var ok bool
		if more, ok = s.Next(']'); !ok {
			return nil, false
		}
	}
	return elems, true
}
