package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// maxJSONDepth bounds the nesting of a result.json; the schema needs five.
const maxJSONDepth = jsonscan.MaxDepth

// decodeJSON reads one JSON document into the generic tree the schema
// validator takes (objects, arrays, strings, json.Number, bools, nil),
// refusing what encoding/json would let through silently: a key that
// occurs twice in one object (the last would win), a number beyond a
// 64-bit float (it would become infinity and break every later step),
// nesting past maxJSONDepth, and data after the document. Errors carry
// the JSON pointer of the place.
func decodeJSON(b []byte) (any, error) {
	if v, ok := fastDecode(b); ok {
		return v, nil
	}
	return slowDecodeJSON(b)
}

// slowDecodeJSON is decodeJSON on json.Decoder's tokens: the reference
// fastDecode is held to, and the one that says what is wrong and where.
func slowDecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not JSON: data after the document")
	}
	return v, nil
}

// token is the next token; the document ending here is an error, which
// says where the token that could not be read starts.
func token(dec *json.Decoder) (json.Token, error) {
	at := dec.InputOffset()
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, &SyntaxError{At: at, Msg: "not JSON: " + err.Error()}
	}
	return tok, nil
}

// SyntaxError is a document that is not JSON; At is the offset the token
// that could not be read starts at (blanks before it included).
type SyntaxError struct {
	At  int64
	Msg string
}

func (e *SyntaxError) Error() string { return e.Msg }

func decodeValue(dec *json.Decoder, ptr string, depth int) (any, error) {
	tok, err := token(dec)
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return nil, &PointerError{Pointer: pointer(ptr), Msg: fmt.Sprintf("nested more than %d deep", maxJSONDepth)}
		}
		if t == '{' {
			return decodeObject(dec, ptr, depth+1)
		}
		return decodeArray(dec, ptr, depth+1)
	case json.Number:
		if _, err := strconv.ParseFloat(t.String(), 64); err != nil {
			return nil, &PointerError{Pointer: pointer(ptr), Msg: fmt.Sprintf("%s is out of the range of a 64-bit number", t)}
		}
		return t, nil
	}
	return tok, nil
}

func decodeObject(dec *json.Decoder, ptr string, depth int) (any, error) {
	m := map[string]any{}
	for dec.More() {
		tok, err := token(dec)
		if err != nil {
			return nil, err
		}
		k := tok.(string)
		kp := ptr + "/" + escapePointer(k)
		if _, dup := m[k]; dup {
			return nil, &PointerError{Pointer: pointer(ptr), Msg: fmt.Sprintf("key %q occurs twice in one object", k), At: dec.InputOffset() - int64(len(k)) - 2}
		}
		if m[k], err = decodeValue(dec, kp, depth); err != nil {
			return nil, err
		}
	}
	if _, err := token(dec); err != nil { // '}'
		return nil, err
	}
	return m, nil
}

func decodeArray(dec *json.Decoder, ptr string, depth int) (any, error) {
	a := []any{}
	for i := 0; dec.More(); i++ {
		v, err := decodeValue(dec, ptr+"/"+strconv.Itoa(i), depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	if _, err := token(dec); err != nil { // ']'
		return nil, err
	}
	return a, nil
}

func pointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

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

// Locate returns the line and column (from 1) where the value at the JSON
// pointer ptr starts in b; false when it is not there.
func Locate(b []byte, ptr string) (line, col int, ok bool) {
	if ptr == "/" {
		ptr = ""
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	found := int64(-1)
	// start is where the next token begins: past blanks, ':' and ','.
	start := func() int64 { return skipBlanks(b, dec.InputOffset()) }
	var walk func(p string, depth int) bool
	walk = func(p string, depth int) bool {
		at := start()
		if p == ptr {
			found = at
			return false
		}
		tok, err := dec.Token()
		if err != nil || depth > maxJSONDepth {
			return false
		}
		d, isDelim := tok.(json.Delim)
		switch {
		case !isDelim:
			return true
		case d == '{':
			for dec.More() {
				k, err := dec.Token()
				key, isKey := k.(string)
				if err != nil || !isKey || !walk(p+"/"+escapePointer(key), depth+1) {
					return false
				}
			}
		case d == '[':
			for i := 0; dec.More(); i++ {
				if !walk(p+"/"+strconv.Itoa(i), depth+1) {
					return false
				}
			}
		}
		_, err = dec.Token()
		return err == nil
	}
	walk("", 0)
	if found < 0 {
		return 0, 0, false
	}
	line, col = lineCol(b, found)
	return line, col, true
}

// lineCol turns a byte offset into a line and a column (from 1, in bytes).
func lineCol(b []byte, off int64) (int, int) {
	off = min(off, int64(len(b)))
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(b[:off], '\n')
	return line, col
}

// Position is where a result.json error is: line and column from 1, or 0
// when unknown.
func Position(b []byte, err error) (line, col int) {
	var pe *PointerError
	var se *SyntaxError
	switch {
	case errors.As(err, &pe) && pe.At > 0:
		return lineCol(b, skipBlanks(b, pe.At))
	case errors.As(err, &pe):
		if l, c, ok := Locate(b, pe.Pointer); ok {
			return l, c
		}
	case errors.As(err, &se):
		return lineCol(b, skipBlanks(b, se.At))
	}
	return 0, 0
}

// skipBlanks is the offset of the first byte at or after off that is not
// white space, ':' or ','.
func skipBlanks(b []byte, off int64) int64 {
	for off < int64(len(b)) && strings.IndexByte(" \t\r\n:,", b[off]) >= 0 {
		off++
	}
	return off
}
