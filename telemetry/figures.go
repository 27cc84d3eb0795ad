package telemetry

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
)

// meta is each main figure's unit and direction; the four are what
// collect adds to a case's metrics.
var meta = map[string][2]string{
	HitRate:       {"ratio", "higher"},
	ConnectorRate: {"ratio", "higher"},
	UsagePeak:     {"ratio", ""},
	Preemptions:   {"", "lower"},
}

// one is a worker's figure in a window, with what the cell pools.
type one struct {
	e        Entry
	v        float64
	num, den float64 // Ratio: the increases, summed over the cell
}

// chosen is, for each figure, the first entry of the catalog whose
// families the worker exposed (both of a ratio's).
func (w *worker) chosen() []Entry {
	var out []Entry
	done := map[string]bool{}
	for _, e := range Catalog {
		if done[e.Figure] || len(w.of(e.Num, e.Era)) == 0 || e.Den != "" && len(w.of(e.Den, e.Era)) == 0 {
			continue
		}
		done[e.Figure] = true
		out = append(out, e)
	}
	return out
}

func (w *worker) of(family string, era func(map[string]string) bool) []*wseries {
	var out []*wseries
	for _, s := range w.series {
		if s.family == family && (era == nil || era(s.labels)) {
			out = append(out, s)
		}
	}
	return out
}

// figures are the worker's figures in the window, each from its chosen
// entry; tokens by source under their own names.
func (w *worker) figures(win Window) (figs map[string]one, tokens map[string]float64, bySource []string) {
	figs, tokens = map[string]one{}, map[string]float64{}
	for _, e := range w.chosen() {
		scale := 1.0
		if e.Unit == "percent" {
			scale = 0.01
		}
		switch e.How {
		case Ratio:
			num, _ := increase(w.of(e.Num, e.Era), win)
			den, ok := increase(w.of(e.Den, e.Era), win)
			if ok && den > 0 {
				figs[e.Figure] = one{e: e, v: num / den, num: num, den: den}
			}
		case Increase: // 0 from a single scrape: the family was exposed
			v, _ := increase(w.of(e.Num, e.Era), win)
			figs[e.Figure] = one{e: e, v: v}
		case BySource:
			bySource = append(bySource, e.ID)
			for _, s := range w.of(e.Num, e.Era) {
				v, _ := increase([]*wseries{s}, win)
				tokens[e.Figure+sourceName(s.labels[e.Label])] += v
			}
		case Last:
			// A gauge kept since the engine started (vLLM V0's hit rate)
			// says nothing of one case: only over the whole cell.
			if win.Start != math.MinInt64 {
				continue
			}
			if v, ok := gauge(e.How, w.of(e.Num, e.Era), win); ok {
				figs[e.Figure] = one{e: e, v: v * scale}
			}
		default:
			if v, ok := gauge(e.How, w.of(e.Num, e.Era), win); ok {
				figs[e.Figure] = one{e: e, v: v * scale}
			}
		}
	}
	return figs, tokens, bySource
}

// sourceName is a label's value as part of a figure's name: lower-case
// letters, digits and _, at most 32.
func sourceName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if b.Len() == 32 {
			break
		}
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}

// increase is how much the counters rose in the window, summed over
// their series, counting from the new start after a reset (a value
// lower than the one before); ok when a series had two points to
// compare.
func increase(ss []*wseries, win Window) (float64, bool) {
	total, ok := 0.0, false
	for _, s := range ss {
		i0, i1, has := counterSpan(s.pts, win)
		if !has {
			continue
		}
		ok = true
		for i := i0 + 1; i <= i1; i++ {
			if d := s.pts[i].v - s.pts[i-1].v; d >= 0 {
				total += d
			} else {
				total += s.pts[i].v
			}
		}
	}
	return total, ok
}

// gauge reduces the gauges' points in the window (negative ones
// dropped), never summing across
// series: Peak their highest, MeanNonZero the mean of the non-zero ones
// (0 when all are 0), Last the mean of each series' last.
func gauge(how How, ss []*wseries, win Window) (float64, bool) {
	peak, sum, n, seen := math.Inf(-1), 0.0, 0, false
	for _, s := range ss {
		// A negative sample is none: vLLM V0 reports -1 with prefix
		// caching off, and no ratio or usage is below 0.
		pts := slices.DeleteFunc(slices.Clone(gaugeSpan(s.pts, win)), func(p point) bool { return p.v < 0 })
		if len(pts) == 0 {
			continue
		}
		seen = true
		if how == Last {
			sum, n = sum+pts[len(pts)-1].v, n+1
			continue
		}
		for _, p := range pts {
			peak = math.Max(peak, p.v)
			if p.v != 0 {
				sum, n = sum+p.v, n+1
			}
		}
	}
	switch {
	case !seen:
		return 0, false
	case how == Peak:
		return peak, true
	case n == 0:
		return 0, true
	}
	return sum / float64(n), true
}

// result is a window's figures: the cell's, pooled over its workers,
// and a row per worker.
type result struct {
	figs []Figure
	rows []Worker
}

// window derives each worker's figures and pools the cell's: a hit rate
// is the sum of the hits' increases over the sum of the queries'
// (workers whose figure came from counters; where none did, the mean of
// the workers' gauge figures), the usage peak the highest worker's,
// preemptions the sum.
func (l *loaded) window(win Window) result {
	var r result
	type pool struct {
		num, den, sum, peak float64
		ratio, n            int
	}
	pools := map[string]*pool{}
	for _, w := range l.workers {
		figs, tokens, bySource := w.figures(win)
		row := Worker{Case: win.Case, Worker: w.label, Role: w.role, Node: node(w.url), Catalog: bySource, Figures: map[string]float64{}}
		for name, o := range figs {
			row.Figures[name] = o.v
			row.Catalog = append(row.Catalog, o.e.ID)
			p := pools[name]
			if p == nil {
				p = &pool{peak: math.Inf(-1)}
				pools[name] = p
			}
			if o.e.How == Ratio {
				p.num, p.den, p.ratio = p.num+o.num, p.den+o.den, p.ratio+1
			}
			p.sum, p.n, p.peak = p.sum+o.v, p.n+1, math.Max(p.peak, o.v)
		}
		for name, v := range tokens {
			row.Figures[name] = v
		}
		slices.Sort(row.Catalog)
		r.rows = append(r.rows, row)
	}
	for name, p := range pools {
		v := p.sum / float64(p.n)
		switch {
		case name == UsagePeak:
			v = p.peak
		case name == Preemptions:
			v = p.sum
		case p.ratio > 0:
			v = p.num / p.den
		}
		r.figs = append(r.figs, Figure{Name: name, Unit: meta[name][0], Direction: meta[name][1], Value: v})
	}
	slices.SortFunc(r.figs, func(a, b Figure) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// notes say, per worker, a figure its engine reports that it exposed
// no family of (naming that engine's families), and a hit rate read
// from a gauge rather than counters.
func (l *loaded) notes() []string {
	var out []string
	for _, w := range l.workers {
		engines := map[string]bool{}
		for _, s := range w.series {
			engines[engineOf(s.family)] = true
		}
		got := map[string]Entry{}
		for _, e := range w.chosen() {
			got[e.Figure] = e
		}
		for _, eng := range []string{"vLLM", "SGLang", "Dynamo"} {
			if !engines[eng] {
				continue
			}
			for _, fig := range expected[eng] {
				if _, ok := got[fig]; !ok {
					out = append(out, fmt.Sprintf("%s: %s exposed none of %s (%s)", w.label, eng, strings.Join(familiesOf(eng, fig), ", "), fig))
				}
			}
		}
		if e, ok := got[HitRate]; ok && e.How != Ratio {
			out = append(out, fmt.Sprintf("%s: %s from the gauge %s (%s), not counters", w.label, HitRate, e.Num, howText[e.How]))
		}
	}
	return out
}

var howText = map[How]string{MeanNonZero: "mean of its non-zero samples", Last: "its last sample, cumulative", Peak: "peak"}

func familiesOf(engine, figure string) []string {
	var out []string
	for _, e := range Catalog {
		if e.Engine == engine && e.Figure == figure && !strings.HasSuffix(e.ID, "-underscore") {
			for _, f := range []string{e.Num, e.Den} {
				if f != "" && !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
	}
	return out
}
