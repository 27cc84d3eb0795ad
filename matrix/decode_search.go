package matrix

import (
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"text/template"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

// The load axes a search varies, and the parameter it numbers a probe's
// repeats with.
const (
	SearchRate        = "rate"
	SearchConcurrency = "concurrency"
	SearchRepeatAxis  = "repeat"
	// MinSearchRepeats and MaxSearchRepeats bound search.repeats: a 95 %
	// interval needs at least two repeats (one value has no spread).
	MinSearchRepeats = 2
	MaxSearchRepeats = 20
)

// Search is the spec's search section: what `kvsweep search` varies, over
// which range, how often each probe repeats and the SLOs a load must meet.
// The load axis is a parameter of every cell ({{.Params.rate}}), set to
// Start in the spec's own sweep and to each probe's load in the search's.
type Search struct {
	Pos                   Pos
	Axis                  string // SearchRate or SearchConcurrency
	Min, Max, Start, Step float64
	Repeats               int
	// Noise is the bound on a figure's coefficient of variation over a
	// probe's repeats above which the probe is called noisy.
	Noise float64
	// Reprobes is how many more times a load whose every repeat failed
	// outside the test is probed before the cell gives up.
	Reprobes int
	SLO      []SLO
}

// SLO is one objective of a search: Metric, judged over a probe's
// repeats, at most Max.
type SLO struct {
	Metric string
	Max    float64
}

var sloMetricRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// search reads search: {axis, min, max, start, step, repeats, noise,
// reprobes, slo}.
func (d *decoder) search(n ast.Node, where string) *Search {
	s := &Search{Pos: yamlpos.PosOf(n), Axis: SearchRate, Min: math.NaN(), Max: math.NaN(), Start: math.NaN(), Step: math.NaN(), Repeats: 3, Noise: 0.1, Reprobes: 2}
	var minN, maxN, startN, stepN, sloN ast.Node
	intIn := func(p *int, lo, hi int) func(ast.Node, string) {
		return func(n ast.Node, w string) {
			if *p = d.Integer(n, w); *p < lo || *p > hi {
				d.Errorf(n, "%s: %d is out of range (expected an integer from %d to %d)", w, *p, lo, hi)
			}
		}
	}
	d.Fields(n, where,
		yamlpos.F("axis", func(n ast.Node, w string) { s.Axis = d.oneOf(n, w, []string{SearchRate, SearchConcurrency}) }),
		yamlpos.F("min", func(n ast.Node, w string) { minN, s.Min = n, d.number(n, w, 0) }),
		yamlpos.F("max", func(n ast.Node, w string) { maxN, s.Max = n, d.number(n, w, 0) }),
		yamlpos.F("start", func(n ast.Node, w string) { startN, s.Start = n, d.number(n, w, 0) }),
		yamlpos.F("step", func(n ast.Node, w string) { stepN, s.Step = n, d.number(n, w, math.SmallestNonzeroFloat64) }),
		yamlpos.F("repeats", func(n ast.Node, w string) {
			if s.Repeats = d.Integer(n, w); s.Repeats < MinSearchRepeats || s.Repeats > MaxSearchRepeats {
				d.Errorf(n, "%s: %d is out of range (expected an integer from %d to %d: the 95 %% interval of a probe needs at least %d repeats)", w, s.Repeats, MinSearchRepeats, MaxSearchRepeats, MinSearchRepeats)
			}
		}),
		yamlpos.F("reprobes", intIn(&s.Reprobes, 0, 5)),
		yamlpos.F("noise", func(n ast.Node, w string) { s.Noise = d.number(n, w, math.SmallestNonzeroFloat64) }),
		yamlpos.F("slo", func(n ast.Node, w string) { sloN, s.SLO = n, d.slo(n, w) }),
	)
	for _, req := range []struct {
		key string
		n   ast.Node
	}{{"min", minN}, {"max", maxN}, {"step", stepN}, {"slo", sloN}} {
		if req.n == nil {
			d.Errorf(n, "%s: missing required key %q", where, req.key)
		}
	}
	if len(d.Errs) > 0 {
		return s
	}
	if !(s.Max > s.Min) {
		d.Errorf(maxN, "%s.max: %g is not above min %g (expected max > min)", where, s.Max, s.Min)
	} else if s.Step > s.Max-s.Min {
		d.Errorf(stepN, "%s.step: %g is wider than the range %g..%g (expected a step of at most max - min)", where, s.Step, s.Min, s.Max)
	}
	if math.IsNaN(s.Start) {
		s.Start = s.DefaultStart()
	} else if s.Start < s.Min || s.Start > s.Max {
		d.Errorf(startN, "%s.start: %g is outside %g..%g (expected min <= start <= max)", where, s.Start, s.Min, s.Max)
	}
	if s.Axis == SearchConcurrency {
		d.wholeLoads(s, where, map[string]ast.Node{"min": minN, "max": maxN, "start": startN, "step": stepN})
	}
	return s
}

// wholeLoads refuses a fractional min, max, start or step on the
// concurrency axis: requests in flight are whole, and so is every load
// of a search whose min and step are (min plus whole steps).
func (d *decoder) wholeLoads(s *Search, where string, nodes map[string]ast.Node) {
	for _, k := range []string{"min", "max", "start", "step"} {
		v := map[string]float64{"min": s.Min, "max": s.Max, "start": s.Start, "step": s.Step}[k]
		if n := nodes[k]; n != nil && v != math.Trunc(v) {
			d.Errorf(n, "%s.%s: %g is not a whole number (expected whole numbers for axis concurrency: requests in flight)", where, k, v)
		}
	}
}

// DefaultStart is where a search starts when the spec says nothing: a
// quarter of max on the step grid, from which the bracketing and the
// bisection together take at most ceil(log2((max-min)/step)) + 2 rounds.
func (s *Search) DefaultStart() float64 {
	return max(s.Min, s.Snap(s.Max/4))
}

// Snap puts a load on the search's grid: min plus a whole number of
// steps, within min..max.
func (s *Search) Snap(x float64) float64 {
	k := math.Round((x - s.Min) / s.Step)
	v := s.Min + k*s.Step
	v = math.Round(v*1e9) / 1e9
	return min(max(v, s.Min), s.Max)
}

// FormatLoad is a load as the axis value a cell carries: the shortest
// decimal ("8", "2.5").
func FormatLoad(x float64) string {
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// slo reads slo: {METRIC: MAX, ...}, in file order.
func (d *decoder) slo(n ast.Node, where string) []SLO {
	var out []SLO
	for _, e := range d.Mapping(n, where) {
		w := yamlpos.Join(where, e.Key)
		if !sloMetricRE.MatchString(e.Key) {
			d.Errorf(e.KeyN, "%s: %q is not a metric name (expected lower-case letters, digits and '_', like ttft_p99_ms)", where, e.Key)
			continue
		}
		out = append(out, SLO{Metric: e.Key, Max: d.number(e.Value, w, 0)})
	}
	if len(out) == 0 && len(d.Errs) == 0 {
		d.Errorf(n, "%s: no objectives (expected at least one, like {ttft_p99_ms: 500})", where)
	}
	return out
}

// number reads a finite number of at least lo.
func (d *decoder) number(n ast.Node, where string, lo float64) float64 {
	v, ok := d.Scalar(n, where)
	if !ok {
		return math.NaN()
	}
	f, err := strconv.ParseFloat(v.S, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f < lo {
		what := "a number of at least 0"
		if lo > 0 {
			what = "a number above 0"
		}
		d.ErrAt(v, "%s: %q is not %s", where, v.S, what)
		return math.NaN()
	}
	return f
}

// searchAxis adds the search's load axis to the matrix, at its start, and
// the repeat axis, at 1: a search spec is a sweep spec that runs every
// cell once at the start load. A
// matrix that has the axis already, or the repeat axis, is refused.
func (d *decoder) searchAxis(s *Spec) {
	if s.Search == nil {
		return
	}
	for _, a := range s.Matrix.Axes {
		if a.Name == s.Search.Axis || a.Name == SearchRepeatAxis {
			d.ErrAt(Value{S: a.Name, Pos: a.Pos}, "matrix.%s: the search sets this parameter of every cell (search.axis %s, and %s for each probe's repeats); remove the axis", a.Name, s.Search.Axis, SearchRepeatAxis)
			return
		}
	}
	s.Matrix.Axes = append(s.Matrix.Axes, Axis{Name: s.Search.Axis, Pos: s.Search.Pos, Values: []Value{{S: FormatLoad(s.Search.Start), Pos: s.Search.Pos}}},
		Axis{Name: SearchRepeatAxis, Pos: s.Search.Pos, Values: []Value{{S: "1", Pos: s.Search.Pos}}})
}

// Rebuild builds cells of the spec from their Params and Cases alone, as
// Expand builds each (its id, name, resources and harness command line,
// templated with the parameters), without expanding the product of the
// axes: a search's round sets the load and repeat of a few cells of a
// matrix that may be large. Errors are positioned like Expand's.
func Rebuild(s *Spec, want []Cell) ([]Cell, error) {
	x := &expander{s: s, d: &decoder{yamlpos.NewDecoder(s.File)}, tmpl: map[Pos]*template.Template{}, failed: map[Pos]bool{}, warned: map[Pos]bool{}}
	if dir, err := filepath.Abs(filepath.Dir(s.File)); err == nil {
		x.specDir = dir
	}
	out := make([]Cell, 0, len(want))
	for _, c := range want {
		out = append(out, x.cell(c.Params, slices.Sorted(slices.Values(c.Cases))))
	}
	if len(x.d.Errs) > 0 {
		return nil, x.d.Errs
	}
	return out, nil
}
