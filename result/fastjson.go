package result

import "github.com/kvsweep/kvsweep/internal/jsonscan"

// fastDecode is decodeJSON for the common case, a well-formed document: a
// byte scanner that builds the same tree (the same maps, slices, strings,
// json.Number, bools and nils) several times faster than json.Decoder's
// tokens. It gives up (ok false) on anything decodeJSON would refuse or
// must explain: a syntax error, a duplicate key, a number out of range,
// nesting past jsonscan.MaxDepth, data after the document; decodeJSON then
// decides and says where. FuzzFastDecode holds the two to the same trees.
func fastDecode(b []byte) (v any, ok bool) {
	s := jsonscan.New(b, nil)
	v, ok = s.Value(0)
	if !ok || !s.Done() {
		return nil, false
	}
	return v, true
}

// scanner is jsonscan's, with the readers of reports' own documents and
// the scratch they reuse.
type scanner struct {
	jsonscan.Scanner
	*Scratch
}

// Scratch is what one goroutine reuses from document to document: the
// interner of the strings they repeat, and the slices a case list and a
// case's metrics are read into before they are copied out at their size
// (a case list grown from empty was four allocations per six-case result:
// 50,000 allocations and 10 MB of a 10,000-cell collect).
type Scratch struct {
	in        interner
	caseBuf   []Case
	metricBuf []Metric
	io        caseIO // the case being read, reused
}

// newScanner scans b with the scratch sc (nil: a fresh one).
func newScanner(b []byte, sc *Scratch) scanner {
	if sc == nil {
		sc = &Scratch{}
	}
	return scanner{Scanner: jsonscan.New(b, &sc.in), Scratch: sc}
}

// readCases reads a case list with readCase, which reads one case into c:
// the list at its size, empty (not nil) when it has none.
func (s *scanner) readCases(depth int, readCase func(depth int, c *Case) bool) ([]Case, bool) {
	s.caseBuf = s.caseBuf[:0]
	ok := s.Elements(depth, func(depth int) bool {
		s.caseBuf = append(s.caseBuf, Case{})
		return readCase(depth, &s.caseBuf[len(s.caseBuf)-1])
	})
	cases := make([]Case, len(s.caseBuf))
	copy(cases, s.caseBuf)
	clear(s.caseBuf) // keeps nothing of this document alive
	return cases, ok
}

// interner shares strings among the results one worker reads.
type interner = jsonscan.Interner
