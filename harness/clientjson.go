package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
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

// A bare Infinity, -Infinity or NaN (Python's json writes them; JSON
// has no such tokens) in a value's place is rewritten into a string of
// the same length, so offsets in messages stay true, and its offset is
// noted: walk turns that string back into a bare value, so a file's own
// string "+Infin" stays a string. In a key's place it is left as it is,
// and the decoder refuses it there with its place.
const (
	posInf = `"+Infin"`  // Infinity
	negInf = `"-Infini"` // -Infinity
	nan    = `"N"`       // NaN
)

// bare is a bare Infinity, -Infinity or NaN token of the file.
type bare float64

// tolerant rewrites the bare tokens in values' places, returning the
// rewritten copy and the offsets of what it rewrote.
func tolerant(b []byte) ([]byte, map[int]bool) {
	out := bytes.Clone(b)
	var at map[int]bool
	in := false
	// The open objects and arrays ('{' or '['), and the last byte
	// outside strings and blanks: a key's place is in an object, after
	// '{' or ','.
	var open []byte
	var last byte
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case in && c == '\\':
			i++
			continue
		case c == '"':
			in = !in
		case in:
			continue
		case c == '{' || c == '[':
			open = append(open, c)
		case c == '}' || c == ']':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
		if in || c == '"' {
			last = '"'
			continue
		}
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			continue
		}
		keyPlace := len(open) > 0 && open[len(open)-1] == '{' && (last == '{' || last == ',')
		last = c
		if keyPlace {
			continue
		}
		for _, r := range [...]struct{ tok, sentinel string }{{"-Infinity", negInf}, {"Infinity", posInf}, {"NaN", nan}} {
			if bytes.HasPrefix(out[i:], []byte(r.tok)) {
				if at == nil {
					at = map[int]bool{}
				}
				at[i] = true
				copy(out[i:], r.sentinel)
				i += len(r.sentinel) - 1
				last = '"'
				break
			}
		}
	}
	return out, at
}

// documents decodes a file: one JSON object, or (jsonl) one object a
// non-empty line.
func documents(name string, b []byte, jsonl bool) ([]doc, error) {
	src, bareAt := tolerant(b)
	if !jsonl || !isJSONL(src) {
		d, err := decodeDoc(name, b, src, bareAt, 0, 1)
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
			d, err := decodeDoc(name, b, src[:off+end], bareAt, off, line)
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
// src (which ends where it must), recording where each value is; bareAt
// holds the offsets of the bare tokens tolerant rewrote.
func decodeDoc(name string, orig, src []byte, bareAt map[int]bool, from, line int) (doc, error) {
	d := doc{name: name, src: orig, line: line, at: map[string]int{}}
	w := jsonscan.Walker{Places: d.at, MaxPointer: maxPointer, Base: from, String: bareValue(bareAt)}
	w.Start(src[from:])
	v, err := w.Value()
	if se, ok := err.(*jsonscan.SyntaxError); ok {
		err = se.Err
	}
	if err == nil && !w.End() {
		err = fmt.Errorf("more than one JSON value")
	}
	if err != nil {
		off := from + int(w.Offset())
		// The decoder's token errors place the offset before or after
		// the bad byte, depending on the token; encoding/json's scanner
		// over the whole document says exactly where (errors only).
		var se *json.SyntaxError
		if errors.As(json.Unmarshal(src[from:], new(any)), &se) {
			err, off = se, from+int(se.Offset)
			if strings.HasPrefix(se.Error(), "invalid character") && se.Offset > 0 {
				off-- // the bad byte has been read: point at it
			}
		}
		return d, fmt.Errorf("%s: %s", d.pos(off), err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		if err := unreadFile(func() string { return d.pos(from) }, v); err != nil {
			return d, err
		}
		return d, fmt.Errorf("%s: expected a JSON object, got %s", d.pos(from), kind(v))
	}
	d.root = root
	return d, nil
}

// maxPointer is the longest JSON pointer whose place the walk notes: the
// readers look up short pointers only, and noting every place of a
// value under a long key would cost the key's length each time.
const maxPointer = 256

// bareValue turns one of tolerant's sentinels back into the bare value it
// stands for, where tolerant rewrote one (bareAt holds the offsets); the
// file's own string of the same letters stays a string.
func bareValue(bareAt map[int]bool) func(s string, end int) (any, bool) {
	return func(s string, end int) (any, bool) {
		for _, r := range [...]struct {
			sentinel string
			v        float64
		}{{posInf, math.Inf(1)}, {negInf, math.Inf(-1)}, {nan, math.NaN()}} {
			if s == strings.Trim(r.sentinel, `"`) && bareAt[end-len(r.sentinel)] {
				return bare(r.v), true
			}
		}
		return nil, false
	}
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
	case bare:
		if math.IsNaN(float64(t)) {
			return "NaN"
		}
		return "an infinity"
	case string:
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
	if b, isBare := x.(bare); present && isBare && math.IsInf(float64(b), 1) {
		return math.Inf(1), true, nil
	}
	if s, isStr := x.(string); present && isStr {
		switch strings.ToLower(s) {
		case "inf", "+inf", "infinity":
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
