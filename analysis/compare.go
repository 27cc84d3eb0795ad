package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
	"golang.org/x/perf/benchmath"
)

// CompareOptions control Compare.
type CompareOptions struct {
	// Threshold is the relative change (0.05 = 5%) past which a change for
	// the worse is a regression; PerMetric overrides it by metric name.
	Threshold float64
	PerMetric map[string]float64
	// Ignore lists parameters that distinguish samples of one cell, not
	// cells (default: repeat).
	Ignore []string
	// All shows unchanged metrics in the markdown, table, CSV and HTML
	// renderings too (JSON always has every metric compared).
	All bool
}

// VerdictChange is a case whose verdict differs between the two sides.
type VerdictChange struct {
	Cell      string `json:"cell"`
	Case      string `json:"case"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	Worse     bool   `json:"worse"`
}

// MetricDelta compares one metric of one case of one cell.
type MetricDelta struct {
	Cell         string    `json:"cell"`
	Case         string    `json:"case"`
	Metric       string    `json:"metric"`
	Unit         string    `json:"unit,omitempty"`
	Direction    string    `json:"direction,omitempty"`
	Baseline     []float64 `json:"baseline"`
	Candidate    []float64 `json:"candidate"`
	BaselineMed  float64   `json:"baseline_median"`
	CandidateMed float64   `json:"candidate_median"`
	DeltaPct     float64   `json:"delta_pct"`
	// Significance is "p=0.008 n=5+5" from a Mann-Whitney U test, "~" when
	// the samples do not differ significantly, or "n=1" when a side has a
	// single sample and nothing can be tested.
	Significance string  `json:"significance"`
	Threshold    float64 `json:"threshold"`
	Regression   bool    `json:"regression"`
	Improvement  bool    `json:"improvement"`
}

// Comparison is baseline against candidate.
type Comparison struct {
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Changes is what differs between the sides' images, commits, kvsweep,
	// cluster, nodes and specs; empty when they ran the same.
	Changes  []Change        `json:"changes"`
	Verdicts []VerdictChange `json:"verdict_changes"`
	Metrics  []MetricDelta   `json:"metrics"`
	// Matched is the number of cells found on both sides.
	Matched int `json:"matched_cells"`
	// OnlyIn lists cells present on one side only.
	OnlyInBaseline  []string `json:"only_in_baseline,omitempty"`
	OnlyInCandidate []string `json:"only_in_candidate,omitempty"`
	// MissingCases lists "CELL CASE" the baseline has and the candidate
	// lacks in a cell both have.
	MissingCases []string `json:"missing_cases,omitempty"`
	// OneSided are the metrics of a case both sides ran that only one side
	// measured (a KV connector's hit rate, which only the arm with a
	// connector reports): shown beside the comparison, never compared.
	OneSided []OneSidedMetric `json:"one_sided,omitempty"`
	// VerdictsOnly lists cells whose metrics were not compared: their
	// topology gives functional verdicts only.
	VerdictsOnly []string `json:"verdicts_only,omitempty"`

	all bool      // render unchanged metrics too (CompareOptions.All)
	at  time.Time // when the newest candidate run was collected
}

// CollectedAt is when the newest candidate run was collected.
func (c *Comparison) CollectedAt() time.Time { return c.at }

// Summary is the comparison in one line: "no differences", or the counts.
func (c *Comparison) Summary() string {
	improved, unchanged := 0, 0
	for _, m := range c.Metrics {
		if m.Improvement {
			improved++
		}
		if m.Unchanged() {
			unchanged++
		}
	}
	if c.Matched == 0 {
		return "No cell matched: baseline and candidate share no cell."
	}
	if len(c.Verdicts) == 0 && unchanged == len(c.Metrics) && len(c.OnlyInBaseline)+len(c.OnlyInCandidate)+len(c.MissingCases) == 0 {
		return fmt.Sprintf("No differences: %d cell(s) matched, the same verdicts, %d metric(s) unchanged.", c.Matched, len(c.Metrics))
	}
	return fmt.Sprintf("%d regression(s), %d improvement(s): %d verdict change(s), %d metric(s) compared (%d unchanged), %d cell(s) matched.",
		c.Regressions(), improved, len(c.Verdicts), len(c.Metrics), unchanged, c.Matched)
}

// Unchanged reports whether a metric's medians agree to the two decimals
// of a percentage the reports show.
func (m MetricDelta) Unchanged() bool {
	return math.Abs(m.DeltaPct) < 0.005 && !m.Regression && !m.Improvement
}

// Shown is the metrics a rendering lists: the changed ones, or all.
func (c *Comparison) Shown() (shown []MetricDelta, unchanged int) {
	for _, m := range c.Metrics {
		if m.Unchanged() && !c.all {
			unchanged++
			continue
		}
		shown = append(shown, m)
	}
	return shown, unchanged
}

// Regressions counts verdicts that got worse and metrics past threshold.
func (c *Comparison) Regressions() int {
	n := 0
	for _, v := range c.Verdicts {
		if v.Worse {
			n++
		}
	}
	for _, m := range c.Metrics {
		if m.Regression {
			n++
		}
	}
	return n
}

// Regressed names each regression Regressions counts, worse verdicts
// first: "CELL CASE PASS -> FAIL", "CELL CASE METRIC +50.00%".
func (c *Comparison) Regressed() []string {
	var out []string
	for _, v := range c.Verdicts {
		if v.Worse {
			out = append(out, fmt.Sprintf("%s %s %s -> %s", v.Cell, v.Case, v.Baseline, v.Candidate))
		}
	}
	for _, m := range c.Metrics {
		if m.Regression {
			out = append(out, fmt.Sprintf("%s %s %s %+.2f%%", m.Cell, m.Case, m.Metric, m.DeltaPct))
		}
	}
	return out
}

// side gathers the samples of one side: per cell key, per case.
type side struct {
	verdicts map[string]map[string][]string // key -> case -> verdicts
	metrics  map[string]map[string]map[string][]float64
	meta     map[string]result.Metric // case/metric -> unit and direction
	names    map[string]string
	// verdictsOnly marks cells whose metrics are never compared.
	verdictsOnly map[string]bool
}

func gather(runs []*testrun.Run, ignore []string) *side {
	s := &side{verdicts: map[string]map[string][]string{}, metrics: map[string]map[string]map[string][]float64{},
		meta: map[string]result.Metric{}, names: map[string]string{}, verdictsOnly: map[string]bool{}}
	for _, r := range runs {
		for _, c := range r.Cells {
			key := CellKey(c.Params, ignore)
			s.names[key] = key
			if c.VerdictsOnly {
				s.verdictsOnly[key] = true
			}
			if s.verdicts[key] == nil {
				s.verdicts[key] = map[string][]string{}
				s.metrics[key] = map[string]map[string][]float64{}
			}
			got := map[string]bool{}
			for _, cs := range c.Cases {
				got[cs.ID] = true
				s.verdicts[key][cs.ID] = append(s.verdicts[key][cs.ID], cs.Verdict)
				if s.metrics[key][cs.ID] == nil {
					s.metrics[key][cs.ID] = map[string][]float64{}
				}
				for _, m := range cs.Metrics {
					s.metrics[key][cs.ID][m.Name] = append(s.metrics[key][cs.ID][m.Name], m.Value)
					s.meta[cs.ID+"/"+m.Name] = m
				}
			}
			for _, id := range c.Planned {
				if !got[id] {
					s.verdicts[key][id] = append(s.verdicts[key][id], absentVerdict(c))
				}
			}
		}
	}
	return s
}

// absentVerdict is what a planned case without a verdict shows.
func absentVerdict(c testrun.CellResult) string {
	if c.Outcome == testrun.OK {
		return testrun.NotReported
	}
	return c.Outcome
}

// CellKey names a cell by its parameters, without those that only tell
// samples apart (ignore): engine-topology-geometry[-key-value...].
func CellKey(params map[string]string, ignore []string) string {
	var parts []string
	for _, k := range []string{"engine", "topology", "geometry"} {
		if !slices.Contains(ignore, k) {
			parts = append(parts, params[k])
		}
	}
	var extra []string
	for k := range params {
		switch {
		case k == "engine", k == "topology", k == "geometry", slices.Contains(ignore, k):
			continue
		}
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		parts = append(parts, k+"-"+params[k])
	}
	return strings.Join(parts, "-")
}

// summarize folds repeated verdicts: one verdict if they agree, else FLAKY.
func summarize(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	pass := 0
	for _, v := range vs {
		if v == result.Pass {
			pass++
		}
	}
	for _, v := range vs[1:] {
		if v != vs[0] {
			return fmt.Sprintf("FLAKY (%d/%d PASS)", pass, len(vs))
		}
	}
	return vs[0]
}

// Compare compares the candidate runs against the baseline runs.
func Compare(baseLabel string, base []*testrun.Run, candLabel string, cand []*testrun.Run, opts CompareOptions) *Comparison {
	if opts.Ignore == nil {
		opts.Ignore = []string{"repeat"}
	}
	b, c := gather(base, opts.Ignore), gather(cand, opts.Ignore)
	cmp := &Comparison{Baseline: baseLabel, Candidate: candLabel, Changes: changes(base, cand),
		Verdicts: []VerdictChange{}, Metrics: []MetricDelta{}, all: opts.All}
	if cmp.Changes == nil {
		cmp.Changes = []Change{}
	}
	for _, r := range cand {
		if r.CollectedAt.After(cmp.at) {
			cmp.at = r.CollectedAt
		}
	}
	for _, key := range slices.Sorted(maps.Keys(b.verdicts)) {
		cv, ok := c.verdicts[key]
		if !ok {
			cmp.OnlyInBaseline = append(cmp.OnlyInBaseline, key)
			continue
		}
		cmp.Matched++
		for _, cs := range slices.Sorted(maps.Keys(b.verdicts[key])) {
			if _, ok := cv[cs]; !ok {
				cmp.MissingCases = append(cmp.MissingCases, key+" "+cs)
			}
		}
		if b.verdictsOnly[key] || c.verdictsOnly[key] {
			cmp.VerdictsOnly = append(cmp.VerdictsOnly, key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.verdicts)) {
		if _, ok := b.verdicts[key]; !ok {
			cmp.OnlyInCandidate = append(cmp.OnlyInCandidate, key)
			continue
		}
		for _, cs := range slices.Sorted(maps.Keys(c.verdicts[key])) {
			bv, cv := summarize(b.verdicts[key][cs]), summarize(c.verdicts[key][cs])
			if bv != cv && bv != "" {
				cmp.Verdicts = append(cmp.Verdicts, VerdictChange{Cell: key, Case: cs, Baseline: bv, Candidate: cv, Worse: bv == result.Pass})
			}
			if b.verdictsOnly[key] || c.verdictsOnly[key] {
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(c.metrics[key][cs])) {
				bs := b.metrics[key][cs][name]
				if len(bs) == 0 {
					if _, ran := b.verdicts[key][cs]; ran {
						cmp.OneSided = append(cmp.OneSided, oneSided(key, cs, name, "candidate", c.metrics[key][cs][name], c.meta[cs+"/"+name]))
					}
					continue
				}
				cmp.Metrics = append(cmp.Metrics, delta(key, cs, name, bs, c.metrics[key][cs][name], c.meta[cs+"/"+name], opts))
			}
			for _, name := range slices.Sorted(maps.Keys(b.metrics[key][cs])) {
				if _, both := c.metrics[key][cs][name]; !both {
					cmp.OneSided = append(cmp.OneSided, oneSided(key, cs, name, "baseline", b.metrics[key][cs][name], b.meta[cs+"/"+name]))
				}
			}
		}
	}
	// Worse first (PASS -> anything), then improvements; stable by cell and case.
	sort.SliceStable(cmp.Verdicts, func(i, j int) bool { return cmp.Verdicts[i].Worse && !cmp.Verdicts[j].Worse })
	sort.SliceStable(cmp.Metrics, func(i, j int) bool {
		a, b := cmp.Metrics[i], cmp.Metrics[j]
		if a.Regression != b.Regression {
			return a.Regression
		}
		return false
	})
	return cmp
}

// OneSidedMetric is a metric only one side measured in a case both ran.
type OneSidedMetric struct {
	Cell   string    `json:"cell"`
	Case   string    `json:"case"`
	Metric string    `json:"metric"`
	Unit   string    `json:"unit,omitempty"`
	Side   string    `json:"side"` // baseline or candidate
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
}

func oneSided(cell, cs, name, side string, vs []float64, meta result.Metric) OneSidedMetric {
	return OneSidedMetric{Cell: cell, Case: cs, Metric: name, Unit: meta.Unit, Side: side,
		Values: append([]float64(nil), vs...), Median: Median(vs)}
}

func delta(cell, cs, name string, base, cand []float64, meta result.Metric, opts CompareOptions) MetricDelta {
	d := MetricDelta{Cell: cell, Case: cs, Metric: name, Unit: meta.Unit, Direction: meta.Direction,
		Baseline: append([]float64(nil), base...), Candidate: append([]float64(nil), cand...)}
	d.BaselineMed, d.CandidateMed = Median(base), Median(cand)
	if d.BaselineMed != 0 {
		d.DeltaPct = (d.CandidateMed - d.BaselineMed) / math.Abs(d.BaselineMed) * 100
	}
	d.Threshold = opts.Threshold
	if t, ok := opts.PerMetric[name]; ok {
		d.Threshold = t
	}
	significant := true
	if len(base) >= 2 && len(cand) >= 2 {
		t := benchmath.DefaultThresholds
		r := benchmath.AssumeNothing.Compare(benchmath.NewSample(append([]float64(nil), base...), &t), benchmath.NewSample(append([]float64(nil), cand...), &t))
		significant = r.P <= r.Alpha
		if significant {
			d.Significance = r.String()
		} else {
			d.Significance = "~ (" + r.String() + ")"
		}
	} else {
		d.Significance = fmt.Sprintf("n=%d", min(len(base), len(cand)))
	}
	worse := (meta.Direction == "lower" && d.DeltaPct > 0) || (meta.Direction == "higher" && d.DeltaPct < 0)
	better := (meta.Direction == "lower" && d.DeltaPct < 0) || (meta.Direction == "higher" && d.DeltaPct > 0)
	past := math.Abs(d.DeltaPct) > d.Threshold*100
	d.Regression = worse && past && significant
	d.Improvement = better && past && significant
	return d
}

func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
