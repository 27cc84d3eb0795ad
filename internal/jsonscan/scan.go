// Package jsonscan reads JSON from a byte slice without reflection: the
// generic tree (objects, arrays, strings, json.Number, bools, nils) or,
// member by member, a document whose shape the caller knows. It never
// decides what it does not expect: every method says ok false and the
// caller takes encoding/json's way, which decides and explains. Large
// files of kvsweep (results, the manifest) and every result.json are read
// with it; their fuzz tests hold each reader to encoding/json.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth bounds nesting: a value deeper than this is left to the caller.
const MaxDepth = 64

// Scanner reads one document.
type Scanner struct {
	b  []byte
	i  int
	in *Interner // nil: every string is new
}

// New scans b; strings read with Str are interned through in (nil: none).
func New(b []byte, in *Interner) Scanner { return Scanner{b: b, in: in} }

// Peek is the next byte after blanks (0 at the end).
func (s *Scanner) Peek() byte {
	s.Space()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// Pos is the offset of the next byte; Bytes the document between two.
func (s *Scanner) Pos() int { return s.i }

// Seek makes offset i (within the document) the next byte.
func (s *Scanner) Seek(i int) { s.i = min(max(i, 0), len(s.b)) }

// Bytes returns the document from offset from to offset to.
func (s *Scanner) Bytes(from, to int) []byte { return s.b[from:to] }

// Done says whether nothing but blanks is left.
func (s *Scanner) Done() bool {
	s.Space()
	return s.i == len(s.b)
}

// Space steps over blanks.
func (s *Scanner) Space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Value reads the value that comes next as the generic tree (maps,
// slices, strings, json.Number, bools, nil), depth being its nesting. It
// gives up (ok false) on what encoding/json's token reader refuses and on
// what it would let through silently: a key twice in one object, a number
// beyond a 64-bit float, nesting past MaxDepth.
func (s *Scanner) Value(depth int) (any, bool) {
	s.Space()
	if s.i >= len(s.b) {
		return nil, false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		if depth >= MaxDepth {
			return nil, false
		}
		return s.object(depth + 1)
	case c == '[':
		if depth >= MaxDepth {
			return nil, false
		}
		return s.array(depth + 1)
	case c == '"':
		return s.string()
	case c == 't':
		return true, s.Literal("true")
	case c == 'f':
		return false, s.Literal("false")
	case c == 'n':
		return nil, s.Literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	}
	return nil, false
}

// Literal consumes word when it comes next (no blanks skipped).
func (s *Scanner) Literal(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// Skip consumes c, after blanks, when it comes next.
func (s *Scanner) Skip(c byte) bool {
	s.Space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// Next reads what follows an element of an object or array: ',' (more),
// the closing byte (done), or anything else (not JSON: ok false).
func (s *Scanner) Next(closing byte) (more, ok bool) {
	if s.Skip(',') {
		return true, true
	}
	return false, s.Skip(closing)
}

func (s *Scanner) object(depth int) (any, bool) {
	s.i++ // {
	m := map[string]any{}
	if s.Skip('}') {
		return m, true
	}
	for more := true; more; {
		s.Space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return nil, false
		}
		k, ok := s.string()
		if !ok || !s.Skip(':') {
			return nil, false
		}
		v, ok := s.Value(depth)
		key := k.(string)
		if _, dup := m[key]; !ok || dup {
			return nil, false
		}
		m[key] = v
		if more, ok = s.Next('}'); !ok {
			return nil, false
		}
	}
	return m, true
}

func (s *Scanner) array(depth int) (any, bool) {
	s.i++ // [
	a := []any{}
	if s.Skip(']') {
		return a, true
	}
	for more := true; more; {
		v, ok := s.Value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok = s.Next(']'); !ok {
			return nil, false
		}
	}
	return a, true
}

// string reads a string literal. One without escapes and with valid UTF-8
// is copied as it is; any other goes through encoding/json, so escapes,
// surrogates and invalid bytes come out exactly as decodeJSON has them.
func (s *Scanner) string() (any, bool) {
	start := s.i
	s.i++
	plain := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if plain {
				return string(s.b[start+1 : s.i-1]), true
			}
			var out string
			if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
				return nil, false
			}
			return out, true
		case c == '\\':
			plain = false
			s.i += 2
			continue
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			if r, size := utf8.DecodeRune(s.b[s.i:]); r == utf8.RuneError && size == 1 {
				plain = false
			} else {
				s.i += size
				continue
			}
		}
		s.i++
	}
	return nil, false
}

// number reads a JSON number (RFC 8259 grammar) as a json.Number that
// fits a 64-bit float.
func (s *Scanner) number() (any, bool) {
	raw, _, ok := s.numberView()
	if !ok {
		return nil, false
	}
	return json.Number(strings.Clone(raw)), true
}

// numberView reads a JSON number (RFC 8259 grammar) that fits a 64-bit
// float: its text, as a view of the document valid while the document
// is, and its value.
func (s *Scanner) numberView() (raw string, f float64, ok bool) {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return "", 0, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return "", 0, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return "", 0, false
		}
	}
	raw = unsafe.String(&s.b[start], s.i-start)
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return "", 0, false
	}
	return raw, f, true
}

// Members reads the object that comes next at depth (as Value would),
// calling member for each member with the scanner before its value and
// the depth of that value; a key that occurs twice, or member returning
// false, ends it with false.
func (s *Scanner) Members(depth int, member func(key string, depth int) bool) bool {
	return s.eachMember(depth, s.Str, member)
}

// Fields is Members for an object whose keys are only compared (a
// struct's): a plain key is passed as a view of the document, valid only
// during the call, so reading it costs no allocation and no lookup. A
// caller that keeps a key uses Members.
func (s *Scanner) Fields(depth int, field func(key string, depth int) bool) bool {
	return s.eachMember(depth, s.key, field)
}

// eachMember is Members with the keys read by key.
func (s *Scanner) eachMember(depth int, key func() (string, bool), member func(key string, depth int) bool) bool {
	s.Space()
	if s.i >= len(s.b) || s.b[s.i] != '{' || depth >= MaxDepth {
		return false
	}
	s.i++
	if s.Skip('}') {
		return true
	}
	var buf [16]string
	seen := buf[:0]
	for more := true; more; {
		k, ok := key()
		if !ok || !s.Skip(':') || slices.Contains(seen, k) {
			return false
		}
		seen = append(seen, k)
		if !member(k, depth+1) {
			return false
		}
		if more, ok = s.Next('}'); !ok {
			return false
		}
	}
	return true
}

// key reads a member name for Fields: printable ASCII without escapes as
// a view of the document, anything else as Str reads it.
func (s *Scanner) key() (string, bool) {
	s.Space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			k := ""
			if j > s.i+1 {
				k = unsafe.String(&s.b[s.i+1], j-s.i-1)
			}
			s.i = j + 1
			return k, true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	return s.Str()
}

// Elements is Members for an array.
func (s *Scanner) Elements(depth int, element func(depth int) bool) bool {
	s.Space()
	if s.i >= len(s.b) || s.b[s.i] != '[' || depth >= MaxDepth {
		return false
	}
	s.i++
	if s.Skip(']') {
		return true
	}
	for more := true; more; {
		if !element(depth + 1) {
			return false
		}
		var ok bool
		if more, ok = s.Next(']'); !ok {
			return false
		}
	}
	return true
}

// Str reads a string that comes next; a plain one (no escape, valid
// UTF-8) the scanner's interner has seen before costs no allocation.
func (s *Scanner) Str() (string, bool) {
	s.Space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	if s.in != nil {
		for j := s.i + 1; j < len(s.b); j++ {
			c := s.b[j]
			if c == '"' {
				v := s.in.Intern(s.b[s.i+1 : j])
				s.i = j + 1
				return v, true
			}
			if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
		}
	}
	v, ok := s.string()
	if !ok {
		return "", false
	}
	return v.(string), true
}

// Num reads a number that comes next, as the reference converts it.
func (s *Scanner) Num() (float64, bool) {
	_, f, ok := s.nextNumber()
	return f, ok
}

// nextNumber is numberView of the number that comes next, after blanks.
func (s *Scanner) nextNumber() (raw string, f float64, ok bool) {
	s.Space()
	if s.i >= len(s.b) || (s.b[s.i] != '-' && (s.b[s.i] < '0' || s.b[s.i] > '9')) {
		return "", 0, false
	}
	return s.numberView()
}

// StrList reads an array of strings (an empty one is not nil). With an
// interner, the strings are read into its scratch list and copied out at
// their number: one allocation, where a list grown from empty took four
// for the eight words of a command line.
func (s *Scanner) StrList(depth int) ([]string, bool) {
	var buf []string
	if s.in != nil {
		buf = s.in.list[:0]
	}
	ok := s.Elements(depth, func(int) bool {
		v, ok := s.Str()
		buf = append(buf, v)
		return ok
	})
	out := make([]string, len(buf))
	copy(out, buf)
	if s.in != nil {
		clear(buf) // keeps no string alive
		s.in.list = buf[:0]
	}
	return out, ok
}

// StrMap reads an object of strings (an empty one is not nil).
func (s *Scanner) StrMap(depth int) (map[string]string, bool) {
	out := map[string]string{}
	ok := s.Members(depth, func(key string, _ int) bool {
		v, ok := s.Str()
		out[key] = v
		return ok
	})
	return out, ok
}

// Integer reads a plain integer (what encoding/json puts in an int).
func (s *Scanner) Integer() (int, bool) {
	raw, _, ok := s.nextNumber()
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(raw)
	return n, err == nil
}

// Boolean reads true or false.
func (s *Scanner) Boolean() (bool, bool) {
	s.Space()
	switch {
	case s.Literal("true"):
		return true, true
	case s.Literal("false"):
		return false, true
	}
	return false, false
}

// Interner hands out one string for equal bytes: the keys, case ids,
// metric names and units of a sweep's results are a few dozen strings
// repeated 100,000s of times. One per worker; it stops growing at
// maxInterned strings. A small direct-mapped table in front of the map
// answers the strings met again and again with one comparison, without
// hashing them.
type Interner struct {
	recent [recentSlots]string
	m      map[string]string
	list   []string // StrList's scratch
}

const (
	maxInterned = 4096
	recentSlots = 256 // a power of two
)

func (in *Interner) Intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	slot := &in.recent[recentSlot(b)]
	if *slot == string(b) {
		return *slot
	}
	v, ok := in.m[string(b)]
	if !ok {
		v = string(b)
		if in.m == nil {
			in.m = map[string]string{}
		}
		if len(in.m) < maxInterned && len(b) <= 64 {
			in.m[v] = v
		}
	}
	*slot = v
	return v
}

// recentSlot picks b's slot in the recent table from its length and its
// first, middle and last bytes: cheap, and different for the strings that
// differ only at one end ("TC-01", "TC-02") or in the middle.
func recentSlot(b []byte) int {
	n := len(b)
	h := uint(n)*0x9e3779b1 ^ uint(b[0])<<1 ^ uint(b[n/2])<<5 ^ uint(b[n-1])<<3
	return int((h ^ h>>8) & (recentSlots - 1))
}

// SkipValue steps over the value that comes next, minding strings and
// nesting only: whoever decodes the bytes stepped over checks them.
func (s *Scanner) SkipValue() bool {
	s.Space()
	if s.i >= len(s.b) {
		return false
	}
	from := s.i
	switch s.b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
	default: // a number or a literal
		for ; s.i < len(s.b); s.i++ {
			switch s.b[s.i] {
			case ',', ':', ']', '}', '[', '{', '"', ' ', '\t', '\n', '\r':
				return s.i > from
			}
		}
		return s.i > from
	}
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if !s.skipString() {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.i++
				return true
			}
		}
		s.i++
	}
	return false
}

// skipString steps over a string literal: from quote to quote (IndexByte finds
// them a word at a time), a quote after an odd run of backslashes being
// escaped.
func (s *Scanner) skipString() bool {
	s.i++ // "
	for {
		q := bytes.IndexByte(s.b[s.i:], '"')
		if q < 0 {
			return false
		}
		s.i += q + 1
		slashes := 0
		for j := s.i - 2; j >= 0 && s.b[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 0 {
			return true
		}
	}
}
