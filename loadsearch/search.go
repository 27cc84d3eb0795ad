// Package loadsearch is the operating-point search: for each cell, the
// highest load at which every SLO holds, found by bracketing (steps up by
// doubling from a start load until an SLO breaks, or down by halving if
// the start already breaks) and then bisection to the search's step. Each
// probe runs its load R times; the SLOs are judged on the repeats' mean,
// the answer given with a 95 % interval from the repeats' spread (see
// docs/search.md). The search is a function over a Prober, which runs a
// round's probes of every cell at once (on a cluster: one sweep per
// round, SweepProber); its state is the frontier file, rewritten after
// each round, and a journal, so a search started again goes on where it
// stopped without probing anything twice.
package loadsearch

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/result"
)

// Verdict of a repeat that failed outside the test after its retries: it
// has no figures and is never read as an SLO breach.
const Infra = "INFRA"

// Config is what a search varies and how it judges.
type Config struct {
	matrix.Search
	// MaxProbes and GPUHours are the budget (0: none): the search stops
	// before a round would pass MaxProbes probes, and after the round that
	// reaches GPUHours.
	MaxProbes int
	GPUHours  float64
}

// eps is how close two loads on the grid are the same.
func (c *Config) eps() float64 { return c.Step * 1e-6 }

// Judge fills a probe's Stats, Meets, Broken and Noisy from its repeats:
// each SLO's figure over the repeats that ran (every repeat but Infra
// ones) must have a mean of at most its Max; a repeat that ran without
// reporting the figure breaks it. Valid is false when no repeat ran.
func (c *Config) Judge(p *frontier.Probe) (valid bool) {
	p.Stats, p.Broken, p.Meets, p.Noisy, p.Infra = map[string]frontier.Stat{}, nil, false, false, false
	var ran []frontier.Repeat
	for _, r := range p.Repeats {
		if r.Verdict != Infra {
			ran = append(ran, r)
		}
	}
	if len(ran) == 0 {
		p.Stats, p.Infra = nil, true
		return false
	}
	p.Broken = failedRepeats(ran)
	names := map[string]bool{}
	for _, r := range ran {
		for k := range r.Figures {
			names[k] = true
		}
	}
	for _, name := range slices.Sorted(mapsKeys(names)) {
		var xs []float64
		for _, r := range ran {
			if v, ok := r.Figures[name]; ok {
				xs = append(xs, v)
			}
		}
		p.Stats[name] = Summarize(xs)
	}
	for _, o := range c.SLO {
		st, ok := p.Stats[o.Metric]
		switch {
		case !ok || st.N < len(ran):
			p.Broken = append(p.Broken, fmt.Sprintf("%s not reported by %d of %d repeats", o.Metric, len(ran)-st.N, len(ran)))
		case st.Mean > o.Max:
			p.Broken = append(p.Broken, fmt.Sprintf("%s %s > %s", o.Metric, num(st.Mean), num(o.Max)))
		}
		if ok && noisy(st, c.Noise) {
			p.Noisy = true
		}
	}
	p.Meets = len(p.Broken) == 0
	return true
}

// failedRepeats says which repeats that ran did not pass, by verdict
// ("1 of 3 repeats TIMEOUT"): a job that timed out or failed may have
// reported figures from its light first case only, so it breaks the
// probe whatever its figures say.
func failedRepeats(ran []frontier.Repeat) []string {
	count := map[string]int{}
	for _, r := range ran {
		if r.Verdict != result.Pass {
			count[r.Verdict]++
		}
	}
	var out []string
	for _, v := range slices.Sorted(maps.Keys(count)) {
		name := v
		if name == "" {
			name = "without a verdict"
		}
		out = append(out, fmt.Sprintf("%d of %d repeats %s", count[v], len(ran), name))
	}
	return out
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// num prints a figure briefly: 612, 48.2, 0.031.
func num(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3g", x), "."), ".")
}

// bracket is what a cell's judged probes say: the highest load that met
// the SLOs below the lowest that broke one (ok flags say whether there is
// either).
type bracket struct {
	lo, hi float64
	hasLo  bool
	hasHi  bool
}

func (c *Config) bracket(probes []frontier.Probe) bracket {
	var b bracket
	for _, p := range probes {
		if p.Infra {
			continue // no repeat ran
		}
		if !p.Meets && (!b.hasHi || p.Load < b.hi) {
			b.hi, b.hasHi = p.Load, true
		}
	}
	for _, p := range probes {
		if p.Meets && (!b.hasHi || p.Load < b.hi) && (!b.hasLo || p.Load > b.lo) {
			b.lo, b.hasLo = p.Load, true
		}
	}
	return b
}

// Next is the load a cell probes next, or done with what is known:
// pure, from the probes so far (judged by Judge; those whose every repeat
// failed outside the test are probed again, up to Reprobes more times).
func (c *Config) Next(probes []frontier.Probe) (load float64, done bool, note string) {
	next, done, note := c.next(c.bracket(probes))
	if done {
		return 0, true, note
	}
	tries := 0
	for _, p := range probes {
		if math.Abs(p.Load-next) < c.eps() && p.Infra {
			tries++
		}
	}
	if tries > c.Reprobes {
		return 0, true, fmt.Sprintf("every repeat at %s %s failed outside the test, %d times", num(next), frontier.Axis(c.Axis).Unit(), tries)
	}
	return next, false, ""
}

func (c *Config) next(b bracket) (float64, bool, string) {
	unit := frontier.Axis(c.Axis).Unit()
	switch {
	case !b.hasLo && !b.hasHi:
		return c.Snap(c.Start), false, ""
	case !b.hasHi:
		if b.lo >= c.Max-c.eps() {
			return 0, true, fmt.Sprintf("every load probed met the SLOs (up to max, %s %s)", num(c.Max), unit)
		}
		n := c.Snap(b.lo * 2)
		if n <= b.lo+c.eps() {
			n = c.Snap(b.lo + c.Step)
		}
		return n, false, ""
	case !b.hasLo:
		if b.hi <= c.Min+c.eps() {
			return 0, true, fmt.Sprintf("the lowest load, min %s %s, broke an SLO", num(c.Min), unit)
		}
		n := c.Snap(b.hi / 2)
		if n >= b.hi-c.eps() {
			n = c.Snap(b.hi - c.Step)
		}
		return n, false, ""
	}
	if b.hi-b.lo <= c.Step+c.eps() {
		return 0, true, ""
	}
	n := c.Snap(b.lo + (b.hi-b.lo)/2)
	if n <= b.lo+c.eps() {
		n = c.Snap(b.lo + c.Step)
	}
	return n, false, ""
}

// Point is a cell's operating point from its probes: the highest load
// that met every SLO below the lowest that broke one; Low the highest
// load at or below it whose every SLO held with 95 % confidence (each
// figure's upper bound at most its Max; min when none did), High the
// lowest at or above the first break where one broke with 95 %
// confidence (a figure's lower bound above its Max; max when none did).
// nil when no load met the SLOs.
func (c *Config) Point(probes []frontier.Probe) *frontier.Point {
	b := c.bracket(probes)
	if !b.hasLo {
		return nil
	}
	pt := &frontier.Point{Load: b.lo, Low: c.Min, High: c.Max}
	sorted := slices.Clone(probes)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Load < sorted[j].Load })
	var at, above *frontier.Probe
	for i := range sorted {
		p := &sorted[i]
		if p.Load <= b.lo+c.eps() && c.surely(p, true) {
			pt.Low = max(pt.Low, p.Load)
		}
		if b.hasHi && p.Load >= b.hi-c.eps() && c.surely(p, false) && pt.High >= p.Load {
			pt.High = p.Load
		}
		if math.Abs(p.Load-b.lo) < c.eps() && p.Meets {
			at = p
		}
		if b.hasHi && math.Abs(p.Load-b.hi) < c.eps() && !p.Meets && above == nil {
			above = p
		}
	}
	pt.Low = min(pt.Low, pt.Load)
	if at != nil {
		pt.Throughput = at.Stats[frontier.Throughput]
		if above != nil {
			pt.MinDetectable = c.minDetectable(at, above)
		}
	}
	return pt
}

// surely says every SLO held (meets) or one broke (!meets) with 95 %
// confidence: each judged on the t interval of its figure's mean, which
// needs at least two repeats that reported it (one value has no spread:
// it is never sure). A probe that did not meet the SLOs (a figure's mean
// past its bound, a repeat that failed) never surely met them.
func (c *Config) surely(p *frontier.Probe, meets bool) bool {
	if p.Infra || (meets && !p.Meets) {
		return false
	}
	for _, o := range c.SLO {
		st, ok := p.Stats[o.Metric]
		sure := ok && st.N >= 2
		if meets && (!sure || st.High > o.Max) {
			return false
		}
		if !meets && sure && st.Low > o.Max {
			return true
		}
	}
	return meets
}

// minDetectable is the smallest change of the operating load the repeats
// could tell from noise: for the SLO figure closest to its bound at the
// breaking probe, the smallest detectable difference of its mean
// (detectable) turned into load by the figure's slope between the two
// probes. 0 when the repeats cannot say (one repeat, no slope).
func (c *Config) minDetectable(at, above *frontier.Probe) float64 {
	best, ratio := "", math.Inf(-1)
	for _, o := range c.SLO {
		if st, ok := above.Stats[o.Metric]; ok && o.Max > 0 && st.Mean/o.Max > ratio {
			best, ratio = o.Metric, st.Mean/o.Max
		}
	}
	a, okA := at.Stats[best]
	b, okB := above.Stats[best]
	if !okA || !okB || b.Mean <= a.Mean || above.Load <= at.Load {
		return 0
	}
	slope := (b.Mean - a.Mean) / (above.Load - at.Load)
	return detectable(a, b) / slope
}
