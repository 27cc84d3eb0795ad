package matrix

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

// Cell is one point of the grid: one job, or one array task.
type Cell struct {
	// ID is a stable hash of Params and Cases: the same spec, however its
	// keys, axes or values are ordered, gives the same IDs.
	ID   string
	Name string // readable, for tables and job names; not unique by itself
	// Params holds every axis and include key of the cell except the case.
	Params    map[string]string
	Cases     []string // sorted
	Engine    string
	Topology  string
	Geometry  string
	Kind      string
	Resources Resources
	// Argv is the harness command line: harness.command, then the topology's
	// args, then the geometry flags, then the cases flag. CellDirToken in a
	// word stands for the cell directory and is replaced when the job runs.
	Argv []string
	// AgentArgv is the node agent's command line on a two-node job's second node.
	AgentArgv []string
	// ServiceArgv is the kvcr_service command line of a sidecar job.
	ServiceArgv []string
	Workers     int
}

// combo is one combination during expansion, with where it came from.
type combo struct {
	vals map[string]string
	src  Pos
}

// Expand turns a spec into its cells, in axis order. Errors are positioned
// like decoding errors.
func Expand(s *Spec) ([]Cell, error) {
	x := &expander{s: s, d: &decoder{yamlpos.NewDecoder(s.File)}, tmpl: map[Pos]*template.Template{}, failed: map[Pos]bool{}, warned: map[Pos]bool{}}
	s.Warnings = nil
	if dir, err := filepath.Abs(filepath.Dir(s.File)); err == nil {
		x.specDir = dir
	}
	combos := x.product()
	combos = x.exclude(combos)
	combos = x.leaveOut(combos)
	combos = x.include(combos)
	cells := x.cells(combos)
	if len(cells) == 0 && len(x.d.Errs) == 0 {
		x.d.ErrAt(Value{Pos: x.s.Matrix.Pos}, "matrix: expands to no cells (the excludes remove every combination); a sweep needs at least one")
	}
	if len(x.d.Errs) > 0 {
		return nil, x.d.Errs
	}
	if err := checkCases(s, cells); err != nil {
		return nil, err
	}
	if err := checkProfileCases(s, cells); err != nil {
		return nil, err
	}
	return cells, nil
}

type expander struct {
	s       *Spec
	specDir string
	d       *decoder
	tmpl    map[Pos]*template.Template
	failed  map[Pos]bool
	warned  map[Pos]bool // words checkWord warned about
}

// MaxCombinations bounds the product of the axes, so a mistyped spec
// fails fast instead of planning millions of jobs.
const MaxCombinations = 1_000_000

func (x *expander) product() []combo {
	axes := x.s.Matrix.Axes
	n := 1
	for _, a := range axes {
		n *= len(a.Values)
		if n > MaxCombinations {
			x.d.ErrAt(Value{Pos: axes[0].Pos}, "matrix: more than %d combinations (the product of the axes); split the sweep", MaxCombinations)
			return nil
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]combo, 0, n)
	idx := make([]int, len(axes))
	for {
		vals := make(map[string]string, len(axes)+2)
		for i, a := range axes {
			vals[a.Name] = a.Values[idx[i]].S
		}
		out = append(out, combo{vals: vals})
		i := len(axes) - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < len(axes[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out
		}
	}
}

func entryText(e Entry) string {
	parts := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		parts[i] = k + ": " + e.Values[k].S
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (x *expander) exclude(combos []combo) []combo {
	removed := make([]bool, len(combos))
	for i, e := range x.s.Matrix.Exclude {
		w := fmt.Sprintf("matrix.exclude[%d]", i)
		ok := true
		for _, k := range e.Keys {
			if x.s.Matrix.axis(k) == nil {
				x.d.ErrAt(Value{Pos: e.KeyPos[k]}, "%s: unknown axis %q (axes: %s)", w, k, strings.Join(x.axisNames(), ", "))
				ok = false
				continue
			}
			x.d.checkAxisValue(e.Values[k], yamlpos.Join(w, k), k, x.s)
		}
		if !ok {
			continue
		}
		matched := 0
		for j, c := range combos {
			if matches(e, c.vals) {
				removed[j] = true
				matched++
			}
		}
		if matched == 0 {
			x.d.ErrAt(Value{Pos: e.Pos}, "%s: %s matches no combination of the matrix", w, entryText(e))
		}
	}
	out := combos[:0]
	for j, c := range combos {
		if !removed[j] {
			out = append(out, c)
		}
	}
	return out
}

// unsupported says what of the combination its engine does not support
// ("case TC-04", "kind disagg-2p1d"), or "".
func (x *expander) unsupported(vals map[string]string) string {
	e := x.s.Engines[vals[AxisEngine]]
	if e == nil {
		return ""
	}
	for _, c := range e.Unsupported.Cases {
		if vals[AxisCase] == c.S {
			return "case " + c.S
		}
	}
	if t := x.s.Topologies[vals[AxisTopology]]; t != nil {
		for _, k := range e.Unsupported.Kinds {
			if t.Kind == k.S {
				return "kind " + k.S
			}
		}
	}
	return ""
}

// leaveOut removes the combinations their engine does not support and
// counts them in Spec.LeftOut.
func (x *expander) leaveOut(combos []combo) []combo {
	x.s.LeftOut = nil
	index := map[[2]string]int{}
	out := combos[:0]
	for _, c := range combos {
		what := x.unsupported(c.vals)
		if what == "" {
			out = append(out, c)
			continue
		}
		k := [2]string{c.vals[AxisEngine], what}
		i, ok := index[k]
		if !ok {
			i = len(x.s.LeftOut)
			index[k] = i
			x.s.LeftOut = append(x.s.LeftOut, LeftOut{Engine: k[0], What: what})
		}
		x.s.LeftOut[i].Combinations++
	}
	return out
}

func (x *expander) axisNames() []string {
	names := make([]string, len(x.s.Matrix.Axes))
	for i, a := range x.s.Matrix.Axes {
		names[i] = a.Name
	}
	return names
}

func matches(e Entry, vals map[string]string) bool {
	for _, k := range e.Keys {
		if vals[k] != e.Values[k].S {
			return false
		}
	}
	return true
}

// include applies GitHub Actions include semantics: an entry is added to
// every combination whose original axis values it does not contradict;
// an entry that fits none becomes a new combination and must then name
// every required axis.
func (x *expander) include(combos []combo) []combo {
	base := len(combos)
	for i, e := range x.s.Matrix.Include {
		w := fmt.Sprintf("matrix.include[%d]", i)
		for _, k := range e.Keys {
			x.d.checkAxisValue(e.Values[k], yamlpos.Join(w, k), k, x.s)
			if x.s.Matrix.axis(k) == nil && !axisRE().MatchString(k) {
				x.d.ErrAt(Value{Pos: e.KeyPos[k]}, "%s: invalid parameter name %q (expected lower-case letters, digits and '_')", w, k)
			}
		}
		matched := false
		for j := 0; j < base; j++ {
			if !x.fits(e, combos[j].vals) {
				continue
			}
			matched = true
			for _, k := range e.Keys {
				if x.s.Matrix.axis(k) == nil {
					combos[j].vals[k] = e.Values[k].S
				}
			}
		}
		if matched {
			continue
		}
		var missing []string
		for _, req := range []string{AxisEngine, AxisTopology, AxisGeometry, AxisCase} {
			if _, ok := e.Values[req]; !ok {
				missing = append(missing, req)
			}
		}
		if len(missing) > 0 {
			x.d.ErrAt(Value{Pos: e.Pos}, "%s: %s matches no combination, and as a new combination it lacks %s", w, entryText(e), strings.Join(missing, ", "))
			continue
		}
		vals := make(map[string]string, len(e.Keys))
		for _, k := range e.Keys {
			vals[k] = e.Values[k].S
		}
		if what := x.unsupported(vals); what != "" {
			x.d.ErrAt(Value{Pos: e.Pos}, "%s: %s asks engine %s for %s, which it does not support (engines.%s.unsupported)", w, entryText(e), vals[AxisEngine], what, vals[AxisEngine])
			continue
		}
		combos = append(combos, combo{vals: vals, src: e.Pos})
	}
	return combos
}

// fits reports whether entry e leaves the original axis values of vals as they are.
func (x *expander) fits(e Entry, vals map[string]string) bool {
	for _, k := range e.Keys {
		if x.s.Matrix.axis(k) != nil && vals[k] != e.Values[k].S {
			return false
		}
	}
	return true
}

// cells groups combinations into cells (all cases together, or one per case)
// and computes identity, resources and command lines.
func (x *expander) cells(combos []combo) []Cell {
	type group struct {
		params map[string]string
		cases  []string
		src    Pos
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, c := range combos {
		params := make(map[string]string, len(c.vals))
		for k, v := range c.vals {
			if k != AxisCase {
				params[k] = v
			}
		}
		caseID := c.vals[AxisCase]
		key := canonical(params, nil)
		if x.s.CaseGrouping == GroupSeparate {
			key = canonical(params, []string{caseID})
		}
		g := byKey[key]
		if g == nil {
			g = &group{params: params, src: c.src}
			byKey[key] = g
			groups = append(groups, g)
		} else if yamlpos.IndexOf(g.cases, caseID) >= 0 || x.s.CaseGrouping == GroupSeparate {
			x.d.ErrAt(Value{Pos: c.src}, "duplicate cell %s (case %s): two combinations have the same parameters", describe(params), caseID)
			continue
		}
		g.cases = append(g.cases, caseID)
	}
	cells := make([]Cell, 0, len(groups))
	for _, g := range groups {
		sort.Strings(g.cases)
		cells = append(cells, x.cell(g.params, g.cases))
	}
	return cells
}
