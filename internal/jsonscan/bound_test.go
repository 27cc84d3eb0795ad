package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Where Bound refuses, and what it says.
func TestBound(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"a": [1, {"b": "[[[["}]}`, ""},
		{strings.Repeat("[", 64) + strings.Repeat("]", 64), ""},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "1:65: nesting deeper than 64 levels"},
		{"{\"a\":\n  " + strings.Repeat(`{"b":`, 64) + "1" + strings.Repeat("}", 65), "2:318: nesting deeper than 64 levels"},
		{`{"s": "\"[[[[[[", "t": 1}`, ""},
		{strings.Repeat(`{"x":1}`+"\n", 1000), ""}, // JSONL: each line from the top
		{strings.Repeat("x", 101), "101 bytes, larger than the limit of 100"},
	} {
		size := 1 << 20
		if strings.HasPrefix(c.doc, "x") {
			size = 100
		}
		err := Bound([]byte(c.doc), 64, size)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%.40q: %v, want %q", c.doc, err, c.want)
		}
	}
	// The place is the first bracket past the limit.
	doc := "{\"a\":\n  " + strings.Repeat(`{"b":`, 64) + "1" + strings.Repeat("}", 65)
	err := Bound([]byte(doc), 64, 1<<20)
	if be, ok := err.(*BoundError); !ok || be.Line != 2 || be.Col != 3+63*5 || doc[be.Off] != '{' {
		t.Errorf("%v (%+v), want line 2 column %d", err, err, 3+63*5)
	}
}

// depthOf is the nesting of a JSON document by encoding/json's tokens;
// ok false where it is not one.
func depthOf(b []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest, err.Error() == "EOF" && depth == 0
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// Bound against encoding/json, the fuzzer growing the nesting: a valid
// document (or JSONL file) is refused exactly when its tokens nest past
// the limit, and the place named is a bracket.
func FuzzBound(f *testing.F) {
	f.Add([]byte(`{"a": [1, {"b": "x"}]}`), uint16(3), uint8(1))
	f.Add([]byte(`[]`), uint16(64), uint8(0))
	f.Add([]byte(`{"s": "\\\"["}`), uint16(200), uint8(2))
	f.Fuzz(func(t *testing.T, inner []byte, n uint16, kind uint8) {
		// Wrap inner in n levels of arrays or objects, as kind says.
		open, close := "[", "]"
		if kind%2 == 1 {
			open, close = `{"k":`, "}"
		}
		b := []byte(strings.Repeat(open, int(n)) + string(inner) + strings.Repeat(close, int(n)))
		err := Bound(b, MaxDepth, 1<<30)
		if err != nil {
			be := err.(*BoundError)
			if c := b[be.Off]; c != '[' && c != '{' {
				t.Fatalf("refused at %q, not a bracket: %v", c, err)
			}
		}
		depth, ok := depthOf(b)
		if !ok {
			return
		}
		if (depth > MaxDepth) != (err != nil) {
			t.Fatalf("nesting %d: Bound says %v", depth, err)
		}
	})
}
