package reports

import "github.com/kvsweep/kvsweep/internal/jsonscan"

// fastDecode is decodeJSON for the common case, a well-formed document: a
// byte scanner that builds the same tree (the same maps, slices, strings,
// json.Number, bools and nils) several times faster than json.Decoder's
// tokens. It gives up (ok false) on anything decodeJSON would refuse or
// must explain: a syntax error, a duplicate key, a number out of range,
// nesting past maxJSONDepth, data after the document; decodeJSON then
// decides and says where. FuzzFastDecode holds the two to the same trees.
func fastDecode(b []byte) (v any, ok bool) {
	s := jsonscan.New(b, nil)
	v, ok = s.Value(0)
	if !ok || !s.Done() {
		return nil, false
	}
	return v, true
}

// scanner is jsonscan's, with the readers of reports' own documents.
type scanner struct {
	jsonscan.Scanner
	read []Metric // a case's metrics as read, before sortedMetrics
}

// interner shares strings among the results one worker reads.
type interner = jsonscan.Interner
