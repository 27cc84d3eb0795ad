package jsonscan

import (
	"bytes"
	"fmt"
)

// BoundError is a document past one of Bound's limits: where (line and
// column from 1, in bytes; 0 for the size) and what.
type BoundError struct {
	Off       int
	Line, Col int
	Msg       string
}

func (e *BoundError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}

// Bound is the pre-scan of a file a harness or a tool wrote, run before
// anything decodes it: at most maxSize bytes, and no value nested deeper
// than maxDepth (objects and arrays; a JSONL file is back at the top
// between its lines). One pass over the bytes, nothing allocated per level: a 400 KB file
// of 200,000 nested arrays is refused at the 65th bracket instead of
// costing gigabytes in a decoder that notes every place. Strings (their
// escapes included) are stepped over; whether the rest is JSON is the
// decoder's to say.
func Bound(b []byte, maxDepth, maxSize int) error {
	if len(b) > maxSize {
		return &BoundError{Msg: fmt.Sprintf("%d bytes, larger than the limit of %d", len(b), maxSize)}
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			// To the closing quote: a backslash escapes the byte after it.
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > maxDepth {
				line := 1 + bytes.Count(b[:i], []byte("\n"))
				col := i - bytes.LastIndexByte(b[:i], '\n')
				return &BoundError{Off: i, Line: line, Col: col, Msg: fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
			}
		case '}', ']':
			depth = max(depth-1, 0)
		}
	}
	return nil
}
