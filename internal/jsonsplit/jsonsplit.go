// Package jsonsplit decodes a JSON object whose bulk is one array member
// (results.json's cells, manifest.json's cells) a span of elements per
// CPU. It finds the elements without decoding them; encoding/json decodes
// the rest of the object, the caller's decoders each element. Anything
// unexpected (no such member, a document that does not split, an element
// that does not decode) says so and the caller decodes the document whole,
// which also says what is wrong with it.
package jsonsplit

import (
	"encoding/json"
	"runtime"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// Unmarshal decodes doc into v, except the array member key, whose
// elements it decodes into the slice *cells, in parallel, with decoders
// newDecoder makes, one per goroutine; each must give what json.Unmarshal
// gives. ok is false when doc did not split or did not decode; v and
// *cells are then undefined.
func Unmarshal[T any](doc []byte, key string, v any, cells *[]T, newDecoder func() func([]byte, *T) error) (ok bool) {
	head, elems, null, ok := split(doc, key)
	if !ok || json.Unmarshal(head, v) != nil {
		return false
	}
	if null {
		*cells = nil
		return true
	}
	out := make([]T, len(elems))
	parts := spans(len(elems), runtime.GOMAXPROCS(0))
	failed := make([]bool, len(parts))
	var wg sync.WaitGroup
	for k, sp := range parts {
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

// spans cuts n items into at most k contiguous spans [from, to).
func spans(n, k int) [][2]int {
	k = max(1, min(k, n))
	out := make([][2]int, 0, k)
	for i := 0; i < k; i++ {
		out = append(out, [2]int{i * n / k, (i + 1) * n / k})
	}
	return out
}

// split returns doc, an object, with the value of its member key replaced
// by null, and that value's elements; null says the value was null. ok is
// false unless doc is one object with key once, an array or null, and no
// other key twice. The bytes stepped over are not checked: decoding head
// and the elements does.
func split(doc []byte, key string) (head []byte, elems [][]byte, null, ok bool) {
	s := jsonscan.New(doc, nil)
	from, to := -1, -1
	ok = s.Members(0, func(k string, _ int) bool {
		if k != key {
			// encoding/json matches names without regard to case: such a
			// member would be the array too.
			return !strings.EqualFold(k, key) && s.SkipValue()
		}
		s.Space()
		from = s.Pos()
		if s.Literal("null") {
			null = true
		} else {
			if !s.Elements(0, func(int) bool {
				s.Space()
				at := s.Pos()
				if !s.SkipValue() {
					return false
				}
				elems = append(elems, s.Bytes(at, s.Pos()))
				return true
			}) {
				return false
			}
		}
		to = s.Pos()
		return true
	})
	if !ok || from < 0 || !s.Done() {
		return nil, nil, false, false
	}
	head = make([]byte, 0, from+4+len(doc)-to)
	head = append(append(append(head, doc[:from]...), "null"...), doc[to:]...)
	return head, elems, null, true
}
