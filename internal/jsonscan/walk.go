package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Walker is the one reader of a harness-written JSON document that knows
// where each value is: it decodes json.Decoder's tokens into the generic
// tree (objects, arrays, strings, json.Number, bools, nil), naming each
// value by its JSON pointer. The readers without reflection (Scanner)
// give up on what they do not expect; a Walker is where they go then, and
// what says what is wrong and where: result.json's errors, a native
// result's, every benchmark client's.
type Walker struct {
	// Strict refuses what encoding/json would let through silently: a
	// key that occurs twice in one object (the last would win), a number
	// beyond a 64-bit float (it would become infinity and break every
	// later step), nesting past MaxDepth. Not strict, the last of two
	// keys wins, as encoding/json and Python's json keep it, and numbers
	// are left for the reader to judge.
	Strict bool
	// MaxDepth bounds nesting (0: none, where the document was bounded
	// before, by Bound): strict, a deeper value is a *PointerError; not
	// strict, the walk stops there with one.
	MaxDepth int
	// Places, where not nil, receives the offset (in the whole file: Base
	// added) where each value starts, blanks and separators before it
	// included, by its JSON pointer; a value whose pointer is longer than
	// MaxPointer bytes (0: any) is not noted, nor is anything under it.
	Places     map[string]int
	MaxPointer int
	// Base is the offset of the document in its file.
	Base int
	// String, where set, may read a string that ends at offset end of the
	// file as another value (a reader's stand-in for a token JSON lacks).
	String func(s string, end int) (any, bool)

	dec *json.Decoder
}

// Start sets the walker on src, the document from its start (Base in the
// file) to the end of the file or of the document's part.
func (w *Walker) Start(src []byte) {
	w.dec = json.NewDecoder(bytes.NewReader(src))
	w.dec.UseNumber()
}

// Value reads the next value of the document.
func (w *Walker) Value() (any, error) { return w.value("", false, 0) }

// End says whether nothing but blanks follows the value read.
func (w *Walker) End() bool {
	_, err := w.dec.Token()
	return err == io.EOF
}

// Offset is how far into the document the walk has read.
func (w *Walker) Offset() int64 { return w.dec.InputOffset() }

// token is the next token; the document ending here is an error, which
// says where the token that could not be read starts.
func (w *Walker) token() (json.Token, error) {
	at := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, &SyntaxError{At: at, Err: err}
	}
	return tok, nil
}

// value reads the value at ptr (long: its pointer is past MaxPointer, and
// nothing under it is noted), depth levels down.
func (w *Walker) value(ptr string, long bool, depth int) (any, error) {
	if w.Places != nil && !long {
		w.Places[ptr] = w.Base + int(w.dec.InputOffset())
	}
	tok, err := w.token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if w.MaxDepth > 0 && depth >= w.MaxDepth {
			return nil, &PointerError{Pointer: rootPointer(ptr), Msg: fmt.Sprintf("nested more than %d deep", w.MaxDepth)}
		}
		if t == '{' {
			return w.object(ptr, long, depth+1)
		}
		return w.array(ptr, long, depth+1)
	case json.Number:
		if _, err := strconv.ParseFloat(t.String(), 64); err != nil && w.Strict {
			return nil, &PointerError{Pointer: rootPointer(ptr), Msg: fmt.Sprintf("%s is out of the range of a 64-bit number", t)}
		}
	case string:
		if w.String != nil {
			if v, ok := w.String(t, w.Base+int(w.dec.InputOffset())); ok {
				return v, nil
			}
		}
	}
	return tok, nil
}

// child is the pointer of a member or element tok of ptr, and whether it
// is past MaxPointer.
func (w *Walker) child(ptr string, long bool, tok string) (string, bool) {
	if long || w.MaxPointer > 0 && len(ptr)+1+len(tok) > w.MaxPointer {
		return "", true
	}
	return ptr + "/" + tok, false
}

func (w *Walker) object(ptr string, long bool, depth int) (any, error) {
	m := map[string]any{}
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return nil, err
		}
		k := tok.(string)
		if _, dup := m[k]; dup && w.Strict {
			return nil, &PointerError{Pointer: rootPointer(ptr), Msg: fmt.Sprintf("key %q occurs twice in one object", k), At: w.dec.InputOffset() - int64(len(k)) - 2}
		}
		p, l := w.child(ptr, long, EscapePointer(k))
		if m[k], err = w.value(p, l, depth); err != nil {
			return nil, err
		}
	}
	if _, err := w.token(); err != nil { // '}'
		return nil, err
	}
	return m, nil
}

func (w *Walker) array(ptr string, long bool, depth int) (any, error) {
	a := []any{}
	for i := 0; w.dec.More(); i++ {
		p, l := w.child(ptr, long, strconv.Itoa(i))
		v, err := w.value(p, l, depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	if _, err := w.token(); err != nil { // ']'
		return nil, err
	}
	return a, nil
}

// DecodeTree reads one document strictly (see Walker.Strict, nesting
// bounded by MaxDepth, nothing after it): the Scanner's tree where it
// reads the document, the Walker's where it gives up, with the place of
// what is wrong.
func DecodeTree(b []byte) (any, error) {
	s := New(b, nil)
	if v, ok := s.Value(0); ok && s.Done() {
		return v, nil
	}
	return WalkTree(b)
}

// WalkTree is DecodeTree on the Walker alone: the reference the Scanner's
// tree is held to.
func WalkTree(b []byte) (any, error) {
	w := Walker{Strict: true, MaxDepth: MaxDepth}
	w.Start(b)
	v, err := w.Value()
	if err != nil {
		return nil, err
	}
	if !w.End() {
		return nil, fmt.Errorf("not JSON: data after the document")
	}
	return v, nil
}

// SyntaxError is a document that is not JSON; At is the offset the token
// that could not be read starts at (blanks before it included), Err
// json.Decoder's word on it.
type SyntaxError struct {
	At  int64
	Err error
}

func (e *SyntaxError) Error() string { return "not JSON: " + e.Err.Error() }

// PointerError is a problem at one place of a JSON document, named by its
// JSON pointer ("/cases/0/verdict").
type PointerError struct {
	Pointer string
	Msg     string
	// At is the offset of the place where the pointer alone cannot say
	// it (the second of two equal keys); 0 otherwise.
	At int64
}

func (e *PointerError) Error() string { return "at " + e.Pointer + ": " + e.Msg }

// rootPointer is "/" for the document itself, which an error names.
func rootPointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// EscapePointer escapes a key as one token of a JSON pointer.
func EscapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// Locate returns the line and column (from 1) where the value at the JSON
// pointer ptr starts in b; false when it is not there.
func Locate(b []byte, ptr string) (line, col int, ok bool) {
	if ptr == "/" {
		ptr = ""
	}
	w := Walker{MaxDepth: MaxDepth + 1, Places: map[string]int{}}
	w.Start(b)
	w.Value() // the places before a problem are noted all the same
	at, ok := w.Places[ptr]
	if !ok {
		return 0, 0, false
	}
	line, col = LineCol(b, int64(at))
	return line, col, true
}

// LineCol turns a byte offset into a line and a column (from 1, in
// bytes), past the blanks, ':' and ',' at the offset: where the value
// noted there starts.
func LineCol(b []byte, off int64) (int, int) {
	for off < int64(len(b)) && strings.IndexByte(" \t\r\n:,", b[off]) >= 0 {
		off++
	}
	off = min(off, int64(len(b)))
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(b[:off], '\n')
	return line, col
}
