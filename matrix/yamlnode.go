package matrix

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	goyaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Error is a problem at one place in a spec file.
type Error struct {
	File string
	Pos  Pos
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// ErrorList is every problem found in one spec, in file order.
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

// decoder walks a goccy/go-yaml AST and records positioned errors.
// Anchors are collected up front so aliases resolve wherever they occur.
type decoder struct {
	file    string
	anchors map[string]ast.Node
	errs    ErrorList
}

func parseYAML(file string, src []byte) (ast.Node, *decoder, error) {
	d := &decoder{file: file, anchors: map[string]ast.Node{}}
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
		return nil, nil, ErrorList{{File: file, Pos: Pos{1, 1}, Msg: "empty spec (expected a mapping with name, topologies, geometries, harness and matrix)"}}
	}
	if len(f.Docs) > 1 {
		p := Pos{1, 1}
		if d := f.Docs[1]; d.Start != nil {
			p = Pos{d.Start.Position.Line, d.Start.Position.Column}
		} else if d.Body != nil {
			p = pos(d.Body)
		}
		return nil, nil, ErrorList{{File: file, Pos: p, Msg: "a spec is one YAML document; found a second one"}}
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

func (d *decoder) errorf(n ast.Node, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	d.errs = append(d.errs, &Error{File: d.file, Pos: pos(n), Msg: fmt.Sprintf(format, args...)})
}

func pos(n ast.Node) Pos {
	if n == nil {
		return Pos{1, 1}
	}
	switch t := n.(type) {
	case *ast.MappingNode:
		// goccy positions a block mapping at its first ':'; users look
		// for its first key.
		if len(t.Values) > 0 && !t.IsFlowStyle {
			return pos(t.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return pos(t.Key)
	}
	if n == nil || n.GetToken() == nil {
		return Pos{1, 1}
	}
	p := n.GetToken().Position
	return Pos{p.Line, p.Column}
}

// resolve strips anchors, tags and aliases down to the node they stand for.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for i := 0; i < 32 && n != nil; i++ {
		switch t := n.(type) {
		case *ast.AnchorNode:
			n = t.Value
		case *ast.TagNode:
			n = t.Value
		case *ast.AliasNode:
			target, ok := d.anchors[t.Value.GetToken().Value]
			if !ok {
				d.errorf(n, "alias *%s: no such anchor", t.Value.GetToken().Value)
				return nil
			}
			n = target
		default:
			return n
		}
	}
	return n
}

func kindName(n ast.Node) string {
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
func (d *decoder) scalar(n ast.Node, where string) (Value, bool) {
	r := d.resolve(n)
	switch t := r.(type) {
	case *ast.StringNode:
		return Value{t.Value, pos(n)}, true
	case *ast.LiteralNode:
		return Value{t.Value.Value, pos(n)}, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return Value{r.GetToken().Value, pos(n)}, true
	}
	d.errorf(orNode(n, r), "%s: expected a scalar, got %s", where, kindName(r))
	return Value{}, false
}

func orNode(a, b ast.Node) ast.Node {
	if a != nil {
		return a
	}
	return b
}

// str is scalar for places where a value must be a string.
func (d *decoder) str(n ast.Node, where string) string {
	v, _ := d.scalar(n, where)
	return v.S
}

func (d *decoder) integer(n ast.Node, where string) int {
	r := d.resolve(n)
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
	d.errorf(orNode(n, r), "%s: %q is not an integer", where, v)
	return 0
}

// list returns the items of a sequence node.
func (d *decoder) list(n ast.Node, where string) []ast.Node {
	r := d.resolve(n)
	if s, ok := r.(*ast.SequenceNode); ok {
		return s.Values
	}
	d.errorf(orNode(n, r), "%s: expected a list, got %s", where, kindName(r))
	return nil
}

func (d *decoder) strList(n ast.Node, where string) []Value {
	items := d.list(n, where)
	out := make([]Value, 0, len(items))
	for i, it := range items {
		if v, ok := d.scalar(it, fmt.Sprintf("%s[%d]", where, i)); ok {
			out = append(out, v)
		}
	}
	return out
}

func strs(vs []Value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.S
	}
	return out
}

// kv is one key of a mapping with the node of its value.
type kv struct {
	Key   string
	KeyN  ast.Node
	Value ast.Node
}

// mapping returns the entries of a mapping node in file order, with merge
// keys ("<<: *anchor") expanded; later keys win over merged ones.
func (d *decoder) mapping(n ast.Node, where string) []kv {
	r := d.resolve(n)
	var values []*ast.MappingValueNode
	switch t := r.(type) {
	case *ast.MappingNode:
		values = t.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{t}
	default:
		d.errorf(orNode(n, r), "%s: expected a mapping, got %s", where, kindName(r))
		return nil
	}
	var out []kv
	seen := map[string]int{}
	add := func(e kv, override bool) {
		if i, ok := seen[e.Key]; ok {
			if override {
				out[i] = e
			}
			return
		}
		seen[e.Key] = len(out)
		out = append(out, e)
	}
	var merged []kv
	for _, mv := range values {
		if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
			merged = append(merged, d.mapping(mv.Value, where+".<<")...)
			continue
		}
		k := d.str(mv.Key, where+" key")
		add(kv{k, mv.Key, mv.Value}, true)
	}
	for _, e := range merged {
		add(e, false)
	}
	return out
}

// field is one known key of a mapping and what to do with its value.
type field struct {
	name string
	set  func(n ast.Node, where string)
}

// fields dispatches the keys of a mapping to their handlers and reports
// unknown keys with the list of known ones.
func (d *decoder) fields(n ast.Node, where string, fs ...field) {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	for _, e := range d.mapping(n, where) {
		i := indexOf(names, e.Key)
		if i < 0 {
			d.errorf(e.KeyN, "%sunknown key %q (expected one of: %s)", prefix(where), e.Key, strings.Join(names, ", "))
			continue
		}
		fs[i].set(e.Value, join(where, e.Key))
	}
}

// prefix is "WHERE: ", or nothing at the top level.
func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// strMap decodes a mapping of scalars, returning the map and its sorted keys.
func (d *decoder) strMap(n ast.Node, where string) (map[string]string, []string) {
	m := map[string]string{}
	for _, e := range d.mapping(n, where) {
		if v, ok := d.scalar(e.Value, join(where, e.Key)); ok {
			m[e.Key] = v.S
		}
	}
	return m, sortedKeys(m)
}
