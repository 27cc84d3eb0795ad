// Package jsonsplit decodes a JSON object whose bulk is one array member
// (results.json's cells, manifest.json's cells) a span of elements per
// CPU. It finds the elements without decoding them; encoding/json decodes
// the rest of the object, the caller's decoders each element. Anything
// unexpected (no such member, a document that does not split, an element
// that does not decode) says so and the caller decodes the document whole,
// which also says what is wrong with it.
package jsonsplit

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
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
	if len(doc) >= parallelFrom {
		defer bulk()()
	}
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
		} else if elems, ok = elements(&s, doc); !ok {
			return false
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

// parallelFrom is the size from which a document is decoded in bulk: its
// array stepped over on every CPU (elements) and the collector running
// less often (bulk); a variable for the tests.
var parallelFrom = 256 << 10

// elements steps s over the array that comes next and returns its
// elements. A large one is cut into a part per CPU, each stepped over on
// its own (parallel); one that does not cut is stepped over in one pass.
func elements(s *jsonscan.Scanner, doc []byte) ([][]byte, bool) {
	if k := runtime.GOMAXPROCS(0); k > 1 && len(doc)-s.Pos() >= parallelFrom {
		if elems, end, ok := parallel(doc, s.Pos(), k); ok {
			s.Seek(end)
			return elems, true
		}
	}
	var elems [][]byte
	ok := s.Elements(0, func(int) bool {
		s.Space()
		at := s.Pos()
		if !s.SkipValue() {
			return false
		}
		elems = append(elems, s.Bytes(at, s.Pos()))
		return true
	})
	return elems, ok
}

// parallel steps over the array at offset open of doc in k parts. Where a
// part starts is a guess: the first place after its share of the bytes
// where the separator between the first two elements occurs again,
// followed by what the second element starts with up to its first key
// (",{\"cell_id\":" in results.json; a comma and a line break with its
// indent in the indented manifest). A part is stepped over as one pass
// would from there. The guess is taken only when the part before it,
// stepped over from a true start, lands on it exactly: then it is a true
// start too, and every part is what one pass gives. ok is false when
// the guesses cannot be made or one is not taken.
func parallel(doc []byte, open, k int) (elems [][]byte, end int, ok bool) {
	starts, ok := partStarts(doc, open, k)
	if !ok {
		return nil, 0, false
	}
	parts := make([]part, len(starts))
	var wg sync.WaitGroup
	for p := range starts {
		wg.Go(func() {
			stop := len(doc) // the last part ends with the array
			if p+1 < len(starts) {
				stop = starts[p+1]
			}
			parts[p] = stepPart(doc, starts[p], stop)
		})
	}
	wg.Wait()
	n := 0
	for _, pt := range parts {
		if !pt.ok {
			return nil, 0, false
		}
		n += len(pt.elems)
	}
	elems = make([][]byte, 0, n)
	for _, pt := range parts {
		elems = append(elems, pt.elems...)
	}
	return elems, parts[len(parts)-1].landed, true
}

// partStarts finds where up to k parts of the array at open start: the
// first element, then the next element that begins as the second does
// (a comma, "{", its first key and the blanks between) after each k-th of
// the document. Fewer than two parts, or an array not of objects, is not
// ok.
func partStarts(doc []byte, open, k int) ([]int, bool) {
	s := jsonscan.New(doc, nil)
	s.Seek(open)
	if !s.Skip('[') {
		return nil, false
	}
	s.Space()
	first := s.Pos()
	if !s.SkipValue() {
		return nil, false
	}
	s.Space()
	comma := s.Pos()
	if !s.Skip(',') || s.Peek() != '{' {
		return nil, false
	}
	second := s.Pos()
	s.Seek(second + 1)
	if s.Peek() != '"' || !s.SkipValue() || !s.Skip(':') {
		return nil, false
	}
	mark := doc[comma:s.Pos()] // ,{"first key": with the blanks between
	starts := []int{first}
	for p := 1; p < k; p++ {
		from := max(open+p*(len(doc)-open)/k, starts[len(starts)-1]+1)
		at := bytes.Index(doc[from:], mark)
		if at < 0 {
			break
		}
		starts = append(starts, from+at+second-comma)
	}
	return starts, len(starts) >= 2
}

// part is the elements one goroutine stepped over.
type part struct {
	elems  [][]byte
	landed int // where the next part's first element starts; the array's end for the last
	ok     bool
}

// stepPart steps over the elements from start until it reaches stop (the
// next part's start) or the array's end; it is ok only if it lands there
// exactly, so a guessed start inside a string fails the whole split.
func stepPart(doc []byte, start, stop int) (pt part) {
	s := jsonscan.New(doc, nil)
	s.Seek(start)
	for {
		at := s.Pos()
		if !s.SkipValue() {
			return pt
		}
		pt.elems = append(pt.elems, doc[at:s.Pos()])
		if s.Skip(']') {
			pt.landed, pt.ok = s.Pos(), stop == len(doc)
			return pt
		}
		if !s.Skip(',') {
			return pt
		}
		s.Space()
		if s.Pos() >= stop {
			pt.landed, pt.ok = s.Pos(), s.Pos() == stop
			return pt
		}
	}
}

// bulkGC is the garbage collector's percent while a large document is
// decoded.
const bulkGC = 400

// bulk makes the garbage collector run less often while a large document
// is decoded, and returns what restores it. Nearly all a decode allocates
// is kept: a collection in the middle of it marks the growing result and
// frees little, so collecting at every doubling of the heap is wasted
// work, and fewer collections cost little memory. A percent set higher
// (or off, GOGC=off) is left as it is; decodes at once share one change,
// undone when the last ends.
func bulk() (restore func()) {
	bulkMu.Lock()
	defer bulkMu.Unlock()
	if bulkDecodes == 0 {
		bulkWas = debug.SetGCPercent(bulkGC)
		if bulkWas < 0 || bulkWas >= bulkGC {
			debug.SetGCPercent(bulkWas)
		}
	}
	bulkDecodes++
	return func() {
		bulkMu.Lock()
		defer bulkMu.Unlock()
		if bulkDecodes--; bulkDecodes == 0 {
			debug.SetGCPercent(bulkWas)
		}
	}
}

var (
	bulkMu      sync.Mutex
	bulkDecodes int // decodes under way
	bulkWas     int // the percent before the first of them
)
