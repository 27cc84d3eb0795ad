package matrix

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

func (d *decoder) geometries(n ast.Node, where string, s *Spec) {
	entries := d.Mapping(n, where)
	if len(entries) == 0 && len(d.Errs) == 0 {
		d.Errorf(n, "%s: empty (expected at least one geometry preset)", where)
	}
	for _, e := range entries {
		w := yamlpos.Join(where, e.Key)
		if !nameRE().MatchString(e.Key) {
			d.Errorf(e.KeyN, "%s: invalid geometry name %q (expected lower-case letters, digits, '.', '_' or '-')", where, e.Key)
		}
		g := &Geometry{Name: e.Key, Flags: map[string]string{}}
		d.Fields(e.Value, w,
			yamlpos.F("flags", func(n ast.Node, w string) { g.Flags, g.Keys = d.StrMap(n, w) }),
		)
		s.Geometries[e.Key] = g
		s.GeometryOrder = append(s.GeometryOrder, e.Key)
	}
}

func (d *decoder) matrix(n ast.Node, where string, s *Spec) {
	m := &s.Matrix
	keys := map[string]ast.Node{}
	for _, e := range d.Mapping(n, where) {
		keys[e.Key] = e.KeyN
		w := yamlpos.Join(where, e.Key)
		switch e.Key {
		case "exclude":
			m.Exclude = d.entries(e.Value, w)
			continue
		case "include":
			m.Include = d.entries(e.Value, w)
			continue
		}
		if !axisRE().MatchString(e.Key) {
			d.Errorf(e.KeyN, "%s: invalid axis name %q (expected lower-case letters, digits and '_')", where, e.Key)
			continue
		}
		ax := Axis{Name: e.Key, Pos: yamlpos.PosOf(e.KeyN)}
		ax.Values = d.StrList(e.Value, w)
		if len(ax.Values) == 0 && d.Resolve(e.Value) != nil {
			if _, ok := d.Resolve(e.Value).(*ast.SequenceNode); ok {
				d.Errorf(e.Value, "%s: empty axis (expected at least one value)", w)
			}
		}
		dup := map[string]bool{}
		for _, v := range ax.Values {
			if dup[v.S] {
				d.ErrAt(v, "%s: duplicate value %q", w, v.S)
			}
			dup[v.S] = true
			d.checkAxisValue(v, w, e.Key, s)
		}
		m.Axes = append(m.Axes, ax)
	}
	required := []string{AxisEngine, AxisTopology, AxisGeometry, AxisCase}
	for _, req := range required {
		if m.axis(req) != nil {
			continue
		}
		// A misspelt axis ("engines:") is where the mistake is: the
		// error points at it rather than at the matrix.
		if near := nearAxis(req, m.Axes, required); near != nil {
			d.Errorf(keys[near.Name], "%s: missing required axis %q (is %q a misspelling of it?)", where, req, near.Name)
			continue
		}
		d.Errorf(n, "%s: missing required axis %q", where, req)
	}
	d.searchAxis(s)
}

// nearAxis is the axis of axes whose name is within two edits of want's,
// itself no required axis: the likely misspelling of a missing one.
func nearAxis(want string, axes []Axis, required []string) *Axis {
	for i, ax := range axes {
		if yamlpos.IndexOf(required, ax.Name) < 0 && editDistance(ax.Name, want) <= 2 {
			return &axes[i]
		}
	}
	return nil
}

// editDistance is the Levenshtein distance of a and b: the fewest
// insertions, deletions and substitutions of a byte that turn a into b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

// checkAxisValue validates a value of a named axis against its domain.
func (d *decoder) checkAxisValue(v Value, where, axis string, s *Spec) {
	switch axis {
	case AxisEngine:
		switch {
		case s.Engines != nil && s.Engines[v.S] == nil:
			d.ErrAt(v, "%s: unknown engine %q (defined under engines: %s)", where, v.S, strings.Join(s.EngineOrder, ", "))
		case s.Engines == nil && yamlpos.IndexOf(Engines, v.S) < 0:
			d.ErrAt(v, "%s: unknown value %q (expected one of: %s, or an engine defined under engines)", where, v.S, strings.Join(Engines, ", "))
		}
	case AxisTopology:
		if s.Topologies[v.S] == nil {
			d.ErrAt(v, "%s: unknown topology %q (defined: %s)", where, v.S, strings.Join(s.TopologyOrder, ", "))
		}
	case AxisGeometry:
		if s.Geometries[v.S] == nil {
			d.ErrAt(v, "%s: unknown geometry %q (defined: %s)", where, v.S, strings.Join(s.GeometryOrder, ", "))
		}
	case AxisCase:
		if v.S == "" || strings.ContainsAny(v.S, ", \t\r\n") {
			d.ErrAt(v, "%s: bad case id %q (expected an id like TC-01, without commas or spaces)", where, v.S)
		}
	}
}

// entries decodes exclude/include: a list of mappings of scalars.
func (d *decoder) entries(n ast.Node, where string) []Entry {
	var out []Entry
	for i, it := range d.List(n, where) {
		wi := fmt.Sprintf("%s[%d]", where, i)
		e := Entry{Values: map[string]Value{}, KeyPos: map[string]Pos{}, Pos: yamlpos.PosOf(it)}
		for _, kv := range d.Mapping(it, wi) {
			if v, ok := d.Scalar(kv.Value, yamlpos.Join(wi, kv.Key)); ok {
				e.Keys = append(e.Keys, kv.Key)
				e.Values[kv.Key] = v
				e.KeyPos[kv.Key] = yamlpos.PosOf(kv.KeyN)
			}
		}
		if len(e.Keys) == 0 && len(d.Errs) == 0 {
			d.Errorf(it, "%s: empty entry (expected axis: value pairs)", wi)
		}
		out = append(out, e)
	}
	return out
}

func (m *Matrix) axis(name string) *Axis {
	for i := range m.Axes {
		if m.Axes[i].Name == name {
			return &m.Axes[i]
		}
	}
	return nil
}
