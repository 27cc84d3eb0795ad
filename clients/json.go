package clients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// doc is one JSON document of a file, decoded, with the place of every
// value for messages.
type doc struct {
	name string
	src  []byte // the whole file
	line int    // the line the document starts on
	root map[string]any
	at   map[string]int // JSON pointer -> offset of its value in src
}

// Sentinels: a bare Infinity, -Infinity or NaN (Python's json writes
// them; JSON has no such tokens) is rewritten, outside strings, into a
// string of the same length, so offsets in messages stay true.
const (
	posInf = `"+Infin"`  // Infinity
	negInf = `"-Infini"` // -Infinity
	nan    = `"N"`       // NaN
)

func tolerant(b []byte) []byte {
	out := bytes.Clone(b)
	in := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case bytes.HasPrefix(out[i:], []byte("-Infinity")):
			copy(out[i:], negInf)
			i += len(negInf) - 1
		case bytes.HasPrefix(out[i:], []byte("Infinity")):
			copy(out[i:], posInf)
			i += len(posInf) - 1
		case bytes.HasPrefix(out[i:], []byte("NaN")):
			copy(out[i:], nan)
			i += len(nan) - 1
		}
	}
	return out
}

// documents decodes a file: one JSON object, or (jsonl) one object a
// non-empty line.
func documents(name string, b []byte, jsonl bool) ([]doc, error) {
	src := tolerant(b)
	if !jsonl || !isJSONL(src) {
		d, err := decodeDoc(name, b, src, 0, 1)
		if err != nil {
			return nil, err
		}
		return []doc{d}, nil
	}
	var docs []doc
	for off, line := 0, 1; off < len(src); line++ {
		end := bytes.IndexByte(src[off:], '\n')
		if end < 0 {
			end = len(src) - off
		}
		if len(bytes.TrimSpace(src[off:off+end])) > 0 {
			d, err := decodeDoc(name, b, src[:off+end], off, line)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
		off += end + 1
	}
	return docs, nil
}

// isJSONL: more than one line holds a value.
func isJSONL(src []byte) bool {
	n := 0
	for _, l := range bytes.Split(src, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 {
			if t[0] != '{' {
				return false
			}
			n++
		}
	}
	return n > 1
}

// decodeDoc decodes the object starting at offset from (on line line) in
// src (which ends where it must), recording where each value is.
func decodeDoc(name string, orig, src []byte, from, line int) (doc, error) {
	d := doc{name: name, src: orig, line: line, at: map[string]int{}}
	dec := json.NewDecoder(bytes.NewReader(src[from:]))
	dec.UseNumber()
	v, err := walk(dec, "", false, from, d.at)
	if err == nil {
		if _, err2 := dec.Token(); err2 != io.EOF {
			err = fmt.Errorf("more than one JSON value")
		}
	}
	if err != nil {
		off := from + int(dec.InputOffset())
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = from + int(se.Offset)
		}
		return d, fmt.Errorf("%s: %s", d.pos(off), err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return d, fmt.Errorf("%s: expected a JSON object, got %s", d.pos(from), kind(v))
	}
	d.root = root
	return d, nil
}

// maxPointer is the longest JSON pointer whose place walk notes: the
// readers look up short pointers only, and noting every place of a
// value under a long key would cost the key's length each time.
const maxPointer = 256

// walk decodes the next value, noting the offset of every value by its
// JSON pointer (ptr "" and long false at the top; long: the pointer is
// past maxPointer, and nothing under it is noted).
func walk(dec *json.Decoder, ptr string, long bool, base int, at map[string]int) (any, error) {
	if !long {
		at[ptr] = base + int(dec.InputOffset())
	}
	child := func(tok string) (string, bool) {
		if long || len(ptr)+1+len(tok) > maxPointer {
			return "", true
		}
		return ptr + "/" + tok, false
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				p, l := child(escape(k))
				v, err := walk(dec, p, l, base, at)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			_, err := dec.Token()
			return m, err
		case '[':
			var a []any
			for i := 0; dec.More(); i++ {
				p, l := child(strconv.Itoa(i))
				v, err := walk(dec, p, l, base, at)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
	}
	return tok, nil
}

func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// pos is name:line:col of an offset.
func (d doc) pos(off int) string {
	// An offset noted before a value may sit on the separator before it.
	for off < len(d.src) && strings.IndexByte(" \t\r\n:,", d.src[off]) >= 0 {
		off++
	}
	line, col := 1, 1
	for _, c := range d.src[:min(off, len(d.src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%s:%d:%d", d.name, line, col)
}

func kind(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		switch t {
		case strings.Trim(posInf, `"`), strings.Trim(negInf, `"`):
			return "an infinity"
		case strings.Trim(nan, `"`):
			return "NaN"
		}
		return fmt.Sprintf("the string %q", t)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// get follows a JSON pointer; ok is false where nothing is there.
func (d doc) get(ptr string) (any, bool) {
	var cur any = d.root
	for _, tok := range strings.Split(ptr, "/")[1:] {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// number reads a finite number at ptr: absent or null is ok=false; any
// other type, an infinity or NaN is an error naming the place.
func (d doc) number(ptr string) (v float64, ok bool, err error) {
	x, present := d.get(ptr)
	if !present || x == nil {
		return 0, false, nil
	}
	n, isNum := x.(json.Number)
	if !isNum {
		return 0, false, fmt.Errorf("%s: %s: expected a number, got %s", d.pos(d.at[ptr]), ptr, kind(x))
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return 0, false, fmt.Errorf("%s: %s: %s is not a finite number", d.pos(d.at[ptr]), ptr, n)
	}
	return f, true, nil
}

// rate reads a number that may be infinite: a bare Infinity, or the
// strings "inf", "Infinity" (as the tools write "as fast as possible").
func (d doc) rate(ptr string) (v float64, ok bool, err error) {
	x, present := d.get(ptr)
	if s, isStr := x.(string); present && isStr {
		switch strings.ToLower(s) {
		case "inf", "+inf", "infinity", strings.ToLower(strings.Trim(posInf, `"`)):
			return math.Inf(1), true, nil
		}
	}
	return d.number(ptr)
}

// text reads a string at ptr ("" where absent or null).
func (d doc) text(ptr string) (string, error) {
	x, present := d.get(ptr)
	if !present || x == nil {
		return "", nil
	}
	s, ok := x.(string)
	if !ok {
		return "", fmt.Errorf("%s: %s: expected a string, got %s", d.pos(d.at[ptr]), ptr, kind(x))
	}
	return s, nil
}
