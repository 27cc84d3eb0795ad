// Package yamlpos decodes YAML by walking goccy/go-yaml's AST, so every
// error names the file, line and column of the offending value. Anchors,
// aliases and merge keys are resolved. The spec and pins decoders build on
// it.
package yamlpos

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	goyaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Pos is a place in a file.
type Pos struct {
	Line, Col int
}

// Value is a scalar with the place it was written.
type Value struct {
	S   string
	Pos Pos
}

// Error is a problem at one place in a file.
type Error struct {
	File string
	Pos  Pos
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// ErrorList is every problem found in one file, in file order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// maxErrors bounds the list so a badly broken file stays readable.
const maxErrors = 20

// Decoder walks a goccy/go-yaml AST and records positioned errors.
// Anchors are collected up front so aliases resolve wherever they occur.
type Decoder struct {
	File    string
	anchors map[string]ast.Node
	Errs    ErrorList
	merging map[ast.Node]bool // mappings whose merge keys are being expanded
}

// Limits on what Parse accepts. The YAML library has no protection of its
// own: its parser is quadratic in the size of one mapping (a 1.6 MB
// mapping took 14 s) and recursive in nesting. Specs and pins files are
// small; these bounds are far above any real one.
const (
	MaxSize   = 256 << 10 // bytes
	MaxDepth  = 64        // nested flow collections, or list dashes on one line
	MaxIndent = 256       // columns of indentation (block nesting)
	maxMerge  = 16        // nested merge keys
)

// NewDecoder is a decoder for values already parsed (to report errors).
func NewDecoder(file string) *Decoder {
	return &Decoder{File: file, anchors: map[string]ast.Node{}}
}

// Parse reads one YAML document. what names the expected content in the
// message for an empty file.
func Parse(file string, src []byte, what string) (ast.Node, *Decoder, error) {
	d := NewDecoder(file)
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf")) // a byte order mark is valid YAML
	if err := Check(file, src); err != nil {
		return nil, nil, err
	}
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		var se *goyaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			p := se.Token.Position
			return nil, nil, ErrorList{{File: file, Pos: Pos{p.Line, p.Column}, Msg: "yaml: " + se.Message}}
		}
		return nil, nil, ErrorList{{File: file, Pos: Pos{1, 1}, Msg: "yaml: " + err.Error()}}
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, nil, ErrorList{{File: file, Pos: Pos{1, 1}, Msg: "empty file (expected " + what + ")"}}
	}
	if len(f.Docs) > 1 {
		p := Pos{1, 1}
		if d := f.Docs[1]; d.Start != nil {
			p = Pos{d.Start.Position.Line, d.Start.Position.Column}
		} else if d.Body != nil {
			p = PosOf(d.Body)
		}
		return nil, nil, ErrorList{{File: file, Pos: p, Msg: "expected one YAML document; found a second one"}}
	}
	ast.Walk(anchorCollector(d.anchors), f.Docs[0].Body)
	return f.Docs[0].Body, d, nil
}

type anchorCollector map[string]ast.Node

func (a anchorCollector) Visit(n ast.Node) ast.Visitor {
	if an, ok := n.(*ast.AnchorNode); ok && an.Name != nil {
		a[an.Name.GetToken().Value] = an.Value
	}
	return a
}

func (d *Decoder) Errorf(n ast.Node, format string, args ...any) {
	if len(d.Errs) >= maxErrors {
		return
	}
	d.Errs = append(d.Errs, &Error{File: d.File, Pos: PosOf(n), Msg: fmt.Sprintf(format, args...)})
}

// PosOf is where a node starts.
func PosOf(n ast.Node) Pos {
	if n == nil {
		return Pos{1, 1}
	}
	switch t := n.(type) {
	case *ast.MappingNode:
		// goccy positions a block mapping at its first ':'; users look
		// for its first key.
		if len(t.Values) > 0 && !t.IsFlowStyle {
			return PosOf(t.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return PosOf(t.Key)
	}
	if n == nil || n.GetToken() == nil {
		return Pos{1, 1}
	}
	p := n.GetToken().Position
	return Pos{p.Line, p.Column}
}

// Check refuses, with a position, what Parse must not hand to the YAML
// library: a file over MaxSize, a NUL byte or invalid UTF-8, flow
// collections nested deeper than MaxDepth, more than MaxDepth list dashes
// on one line, and indentation past MaxIndent columns.
func Check(file string, src []byte) error {
	if len(src) > MaxSize {
		return ErrorList{{File: file, Pos: Pos{1, 1}, Msg: fmt.Sprintf("file is %d bytes, over the %d-byte limit", len(src), MaxSize)}}
	}
	at := func(line, col int, format string, args ...any) error {
		return ErrorList{{File: file, Pos: Pos{line, col}, Msg: fmt.Sprintf(format, args...)}}
	}
	depth := 0
	for ln, l := range bytes.Split(src, []byte("\n")) {
		line := ln + 1
		if i := bytes.IndexByte(l, 0); i >= 0 {
			return at(line, i+1, "a NUL byte (YAML text cannot hold one)")
		}
		if !utf8.Valid(l) {
			col := 1
			for len(l) > 0 {
				r, size := utf8.DecodeRune(l)
				if r == utf8.RuneError && size <= 1 {
					break
				}
				l, col = l[size:], col+1
			}
			return at(line, col, "invalid UTF-8 (a spec is UTF-8 text)")
		}
		indent := len(l) - len(bytes.TrimLeft(l, " "))
		if indent > MaxIndent {
			return at(line, indent+1, "indented %d columns, past the limit of %d: nested too deep", indent, MaxIndent)
		}
		dashes := 0
		quote := byte(0)
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				} else if c == '\\' && quote == '"' {
					i++
				}
			case c == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
				i = len(l)
			case c == '"' || c == '\'':
				quote = c
			case c == '[' || c == '{':
				if depth++; depth > MaxDepth {
					return at(line, i+1, "collections nested more than %d deep", MaxDepth)
				}
			case c == ']' || c == '}':
				depth = max(depth-1, 0)
			case c == '-' && (i+1 == len(l) || l[i+1] == ' ') && depth == 0:
				if dashes++; dashes > MaxDepth {
					return at(line, i+1, "lists nested more than %d deep on one line", MaxDepth)
				}
			}
		}
	}
	return nil
}

// resolve strips anchors, tags and aliases down to the node they stand for.
func (d *Decoder) Resolve(n ast.Node) ast.Node {
	for i := 0; i < 32 && n != nil; i++ {
		switch t := n.(type) {
		case *ast.AnchorNode:
			n = t.Value
		case *ast.TagNode:
			n = t.Value
		case *ast.AliasNode:
			target, ok := d.anchors[t.Value.GetToken().Value]
			if !ok {
				d.Errorf(n, "alias *%s: no such anchor", t.Value.GetToken().Value)
				return nil
			}
			n = target
		default:
			return n
		}
	}
	return n
}

// KindName names a node's kind for messages: "a list", "a mapping"...
func KindName(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "null"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode:
		return "an integer"
	case *ast.FloatNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	default:
		return "a string"
	}
}

// scalar returns the text of a scalar node, or false (with an error) for
// mappings, lists and null.
func (d *Decoder) Scalar(n ast.Node, where string) (Value, bool) {
	r := d.Resolve(n)
	switch t := r.(type) {
	case *ast.StringNode:
		return d.text(t.Value, n), true
	case *ast.LiteralNode:
		return d.text(t.Value.Value, n), true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return Value{r.GetToken().Value, PosOf(n)}, true
	}
	d.Errorf(orNode(n, r), "%s: expected a scalar, got %s", where, KindName(r))
	return Value{}, false
}

// text is a string value, refused when it holds a NUL, which no argv
// word, environment value or file name can carry (a "\0" escape).
func (d *Decoder) text(s string, n ast.Node) Value {
	if strings.IndexByte(s, 0) >= 0 {
		d.Errorf(n, "%q contains a NUL character, which no command line, environment value or file name can hold", s)
	}
	return Value{s, PosOf(n)}
}

func orNode(a, b ast.Node) ast.Node {
	if a != nil {
		return a
	}
	return b
}

// str is scalar for places where a value must be a string.
func (d *Decoder) Str(n ast.Node, where string) string {
	v, _ := d.Scalar(n, where)
	return v.S
}

func (d *Decoder) Integer(n ast.Node, where string) int {
	r := d.Resolve(n)
	if t, ok := r.(*ast.IntegerNode); ok {
		i, err := strconv.Atoi(t.GetToken().Value)
		if err == nil {
			return i
		}
	}
	v := ""
	if r != nil && r.GetToken() != nil {
		v = r.GetToken().Value
	}
	d.Errorf(orNode(n, r), "%s: %q is not an integer", where, v)
	return 0
}

// Bool is a boolean value (true or false).
func (d *Decoder) Bool(n ast.Node, where string) bool {
	r := d.Resolve(n)
	if b, ok := r.(*ast.BoolNode); ok {
		return b.Value
	}
	v := ""
	if r != nil && r.GetToken() != nil {
		v = r.GetToken().Value
	}
	d.Errorf(orNode(n, r), "%s: %q is not a boolean (expected true or false)", where, v)
	return false
}

// list returns the items of a sequence node.
func (d *Decoder) List(n ast.Node, where string) []ast.Node {
	r := d.Resolve(n)
	if s, ok := r.(*ast.SequenceNode); ok {
		return s.Values
	}
	d.Errorf(orNode(n, r), "%s: expected a list, got %s", where, KindName(r))
	return nil
}

func (d *Decoder) StrList(n ast.Node, where string) []Value {
	items := d.List(n, where)
	out := make([]Value, 0, len(items))
	for i, it := range items {
		if v, ok := d.Scalar(it, fmt.Sprintf("%s[%d]", where, i)); ok {
			out = append(out, v)
		}
	}
	return out
}

// KV is one key of a mapping with the node of its value.
type KV struct {
	Key   string
	KeyN  ast.Node
	Value ast.Node
}

// mapping returns the entries of a mapping node in file order, with merge
// keys ("<<: *anchor") expanded; later keys win over merged ones.
func (d *Decoder) Mapping(n ast.Node, where string) []KV {
	r := d.Resolve(n)
	var values []*ast.MappingValueNode
	switch t := r.(type) {
	case *ast.MappingNode:
		values = t.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{t}
	default:
		d.Errorf(orNode(n, r), "%s: expected a mapping, got %s", where, KindName(r))
		return nil
	}
	var out []KV
	seen := map[string]int{}
	add := func(e KV, override bool) {
		if i, ok := seen[e.Key]; ok {
			if override {
				out[i] = e
			}
			return
		}
		seen[e.Key] = len(out)
		out = append(out, e)
	}
	var merged []KV
	if d.merging == nil {
		d.merging = map[ast.Node]bool{}
	}
	if d.merging[r] || len(d.merging) >= maxMerge {
		d.Errorf(orNode(n, r), "%s: merge keys refer to themselves or nest more than %d deep", where, maxMerge)
		return nil
	}
	d.merging[r] = true
	defer delete(d.merging, r)
	for _, mv := range values {
		if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
			merged = append(merged, d.Mapping(mv.Value, where+".<<")...)
			continue
		}
		k := d.Str(mv.Key, where+" key")
		add(KV{k, mv.Key, mv.Value}, true)
	}
	for _, e := range merged {
		add(e, false)
	}
	return out
}

// Field is one known key of a mapping and what to do with its value.
type Field struct {
	Name string
	Set  func(n ast.Node, where string)
}

// fields dispatches the keys of a mapping to their handlers and reports
// unknown keys with the list of known ones.
func (d *Decoder) Fields(n ast.Node, where string, fs ...Field) {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	for _, e := range d.Mapping(n, where) {
		i := IndexOf(names, e.Key)
		if i < 0 {
			d.Errorf(e.KeyN, "%sunknown key %q (expected one of: %s)", Prefix(where), e.Key, strings.Join(names, ", "))
			continue
		}
		fs[i].Set(e.Value, Join(where, e.Key))
	}
}

// Prefix is "WHERE: ", or nothing at the top level.
func Prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

func Join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

// IndexOf is the index of s in list, or -1.
func IndexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// strMap decodes a mapping of scalars, returning the map and its sorted keys.
func (d *Decoder) StrMap(n ast.Node, where string) (map[string]string, []string) {
	m := map[string]string{}
	for _, e := range d.Mapping(n, where) {
		if v, ok := d.Scalar(e.Value, Join(where, e.Key)); ok {
			m[e.Key] = v.S
		}
	}
	return m, slices.Sorted(maps.Keys(m))
}

// ErrAt records an error at the place of a decoded value.
func (d *Decoder) ErrAt(v Value, format string, args ...any) {
	if len(d.Errs) < maxErrors {
		d.Errs = append(d.Errs, &Error{File: d.File, Pos: v.Pos, Msg: fmt.Sprintf(format, args...)})
	}
}

// F is a Field.
func F(name string, set func(n ast.Node, where string)) Field { return Field{Name: name, Set: set} }
