package result

import (
	"errors"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// decodeJSON reads one JSON document into the generic tree the schema
// validator takes (objects, arrays, strings, json.Number, bools, nil),
// refusing what encoding/json would let through silently: a key that
// occurs twice in one object (the last would win), a number beyond a
// 64-bit float (it would become infinity and break every later step),
// nesting past jsonscan.MaxDepth (the schema needs five), and data after
// the document. Errors carry the JSON pointer of the place. It is
// jsonscan.DecodeTree, which the native mapping (package harness) reads
// with, through result's own fast path (FuzzFastDecode holds the two).
func decodeJSON(b []byte) (any, error) {
	if v, ok := fastDecode(b); ok {
		return v, nil
	}
	return slowDecodeJSON(b)
}

// slowDecodeJSON is decodeJSON on json.Decoder's tokens (jsonscan's
// positioned Walker): the reference fastDecode is held to, and the one
// that says what is wrong and where.
func slowDecodeJSON(b []byte) (any, error) { return jsonscan.WalkTree(b) }

// SyntaxError is a document that is not JSON; At is the offset the token
// that could not be read starts at (blanks before it included).
type SyntaxError = jsonscan.SyntaxError

// PointerError is a problem at one place of a JSON document, named by its
// JSON pointer ("/cases/0/verdict").
type PointerError = jsonscan.PointerError

// Locate returns the line and column (from 1) where the value at the JSON
// pointer ptr starts in b; false when it is not there.
func Locate(b []byte, ptr string) (line, col int, ok bool) { return jsonscan.Locate(b, ptr) }

// Position is where a result.json error is: line and column from 1, or 0
// when unknown.
func Position(b []byte, err error) (line, col int) {
	var pe *PointerError
	var se *SyntaxError
	switch {
	case errors.As(err, &pe) && pe.At > 0:
		return jsonscan.LineCol(b, pe.At)
	case errors.As(err, &pe):
		if l, c, ok := Locate(b, pe.Pointer); ok {
			return l, c
		}
	case errors.As(err, &se):
		return jsonscan.LineCol(b, se.At)
	}
	return 0, 0
}
