package reports

import (
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// The history page: what a team opens before a release. One chart per
// metric and test case with a line per cell (engine, topology, geometry;
// repeats are samples of one point), the x-axis labelled by run date with
// the component commits and image digests that changed marked on it, the
// y-axis from the data with its unit and direction, and regressions (a
// point worse than the same cell's previous point by more than
// RegressionStep) marked. Under each chart the values behind it; then the
// runs, newest first, with their verdict grids and notes. One file, no
// scripts and nothing fetched: it opens from a CI artifact as it is.

// RegressionStep is the change for the worse, from a cell's previous run,
// that the history page marks as a regression.
const RegressionStep = 0.05

// chart geometry, in SVG user units; the SVG scales to the window.
const (
	chartW, chartH                    = 640, 260
	plotL, plotR, plotT, plotB        = 64, 628, 30, 204
	maxPointMarks                     = 60 // more runs than this: lines only
	dateLayout, timeLayout, fullStamp = "01-02", "15:04", "2006-01-02 15:04"
)

// palette colours the cells' lines. None of it is red, the colour of a
// regression (regressionColor), nor orange, that of a change mark: a
// cell's line never reads as a regression.
var palette = []string{"#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#8c564b", "#7f7f7f", "#bcbd22", "#e377c2"}

// regressionColor fills a regression's point (and its legend entry).
const regressionColor = "#d00"

type tick struct {
	Pos           float64
	Label, Label2 string
	Anchor        string // of an x-axis label: middle, or end at the plot's right edge
}

type mark struct {
	X      float64
	Label  string   // the whole change, for the tooltip
	Lines  []string // one per component: "kvcr→9e8d7c6"
	Anchor string   // start, or end past the middle of the plot
	DX     int
}

type point struct {
	X, Y  float64
	Title string
	Worse bool
}

type series struct {
	Name, Color, Dash, Path string
	Points                  []point
	vals                    []float64 // per run, NaN where absent
}

type valueCell struct {
	Text  string
	Worse bool
}

type valueRow struct {
	Date, Sweep, Changed string
	Cells                []valueCell
}

type chartView struct {
	ID, Metric, Case, Unit, Direction, YTitle string
	W, H, L, R, T, B                          int
	XTicks, YTicks                            []tick
	Changes                                   []mark
	Series                                    []*series
	Regressions                               int
	Rows                                      []valueRow // newest first
}

type gridRow struct {
	Name, Outcome string
	Verdicts      []string
	Evidence      []testrun.Evidence
	Workers       [][]string // workerRows
	Health        []string   // healthLines
}

type runSection struct {
	ID, Date, Counts, Changed string
	Cases                     []string
	Cells                     []gridRow
	Notes                     []testrun.Note
}

type pageView struct {
	Title, Subtitle string
	RegressionColor string
	Charts          []chartView
	History         []analysis.HistoryRow // newest first
	Runs            []runSection          // newest first
	WorkerHeader    []string
}

// WriteHTML renders runs (oldest first) as the history page; title names
// what was selected (the filters of report --history).
func WriteHTML(w io.Writer, runs []*testrun.Run, title string) error {
	if title == "" {
		title = "kvsweep history"
	}
	v := pageView{Title: title, RegressionColor: regressionColor, WorkerHeader: workerHeader}
	if n := len(runs); n > 0 {
		v.Subtitle = fmt.Sprintf("%d run(s), %s to %s (UTC).", n, runs[0].Date().Format(fullStamp), runs[n-1].Date().Format(fullStamp))
	} else {
		v.Subtitle = "No run to show."
	}
	changed := runChanges(runs)
	v.Charts = historyCharts(runs, changed)
	hist := analysis.History(runs, analysis.DefaultFigures)
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		cases := testrun.CaseIDs(r)
		sec := runSection{ID: r.ID, Date: r.Date().Format(fullStamp), Counts: r.CountsLine(), Changed: changed[i], Cases: cases, Notes: r.Notes}
		for _, c := range r.Cells {
			sec.Cells = append(sec.Cells, gridRow{c.Name, testrun.OutcomeText(c), cellVerdicts(c, cases), r.EvidenceOf(c), workerRows(c), healthLines(c)})
		}
		v.Runs = append(v.Runs, sec)
		v.History = append(v.History, hist[i])
	}
	return historyPage().Execute(w, v)
}

// runChanges says, per run, which component commits and image digests
// differ from the run before it ("kvcr 0c1d2e3→9e8d7c6"); "" for none.
func runChanges(runs []*testrun.Run) []string {
	out := make([]string, len(runs))
	var prev map[string]string
	for i, r := range runs {
		cur := map[string]string{}
		for _, c := range r.Cells {
			if c.Image.Digest != "" && cur["image"] == "" {
				cur["image"] = testrun.ShortDigest(c.Image.Digest)
			}
			if sr := c.Image.SourceRevisions; sr != nil {
				for _, n := range sr.Names() {
					if cur[n] == "" && sr.Commit(n) != "" {
						cur[n] = shortCommit(sr.Commit(n))
					}
				}
			}
		}
		if prev != nil {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(cur)) {
				if p, ok := prev[k]; ok && p != cur[k] {
					parts = append(parts, k+" "+p+"→"+cur[k])
				}
			}
			out[i] = strings.Join(parts, ", ")
		}
		prev = cur
	}
	return out
}

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

// historyCharts makes one chart per metric and case with a value in any run.
func historyCharts(runs []*testrun.Run, changed []string) []chartView {
	all := chartSamples(runs)
	keys := slices.SortedFunc(maps.Keys(all), func(a, b chartKey) int {
		return strings.Compare(a.metric+"\x00"+a.cs, b.metric+"\x00"+b.cs)
	})
	xOf := func(i int) float64 {
		if len(runs) == 1 {
			return float64(plotL+plotR) / 2
		}
		return plotL + float64(i)*float64(plotR-plotL)/float64(len(runs)-1)
	}
	colors := seriesColors(all)
	var out []chartView
	for n, k := range keys {
		a := all[k]
		cv := chartView{ID: fmt.Sprintf("chart-%d", n), Metric: k.metric, Case: k.cs, Unit: a.unit, Direction: a.dir,
			W: chartW, H: chartH, L: plotL, R: plotR, T: plotT, B: plotB}
		cv.YTitle = k.metric
		if a.unit != "" {
			cv.YTitle += " (" + a.unit + ")"
		}
		lo, hi := cv.addSeries(a, len(runs), colors)
		var yOf func(float64) float64
		cv.YTicks, yOf = yAxis(lo, hi)
		cv.XTicks = xTicks(runs, xOf)
		cv.Changes = changeMarks(changed, xOf)
		for _, s := range cv.Series {
			cv.Regressions += s.draw(runs, a, xOf, yOf)
		}
		cv.Rows = valueRows(runs, changed, cv.Series, a.dir)
		out = append(out, cv)
	}
	return out
}

// seriesColors gives every cell of every chart its colour and dash, the
// same on each chart it is drawn on: the cells in name order take the
// palette's colours, then the same colours dashed.
func seriesColors(all map[chartKey]*samples) map[string]seriesStyle {
	names := map[string]bool{}
	for _, a := range all {
		for name := range a.series {
			names[name] = true
		}
	}
	out := map[string]seriesStyle{}
	for i, name := range slices.Sorted(maps.Keys(names)) {
		st := seriesStyle{Color: palette[i%len(palette)]}
		if i >= len(palette) {
			st.Dash = "6 3"
		}
		out[name] = st
	}
	return out
}

// seriesStyle is how a cell's line is drawn.
type seriesStyle struct{ Color, Dash string }

// chartKey names a chart: a metric of a test case.
type chartKey struct{ metric, cs string }

// samples are one chart's values: per series (a cell, repeats merged),
// per run, the values of its cells.
type samples struct {
	unit, dir string
	series    map[string][][]float64
}

// chartSamples gathers the values of every metric of every case of the
// runs' cells that have a result.
func chartSamples(runs []*testrun.Run) map[chartKey]*samples {
	all := map[chartKey]*samples{}
	for i, r := range runs {
		for _, c := range r.Cells {
			if c.Outcome != testrun.OK && c.Outcome != testrun.HarnessFailed {
				continue
			}
			name := analysis.CellKey(c.Params, []string{"repeat"})
			for _, cs := range c.Cases {
				for _, met := range cs.Metrics {
					k := chartKey{met.Name, cs.ID}
					a := all[k]
					if a == nil {
						a = &samples{unit: met.Unit, dir: met.Direction, series: map[string][][]float64{}}
						all[k] = a
					}
					if a.series[name] == nil {
						a.series[name] = make([][]float64, len(runs))
					}
					a.series[name][i] = append(a.series[name][i], met.Value)
				}
			}
		}
	}
	return all
}

// addSeries adds a series per cell, its value per run the median of the
// run's samples (NaN where it has none), and returns the values' range.
func (cv *chartView) addSeries(a *samples, runs int, styles map[string]seriesStyle) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, name := range slices.Sorted(maps.Keys(a.series)) {
		st := styles[name]
		s := &series{Name: name, Color: st.Color, Dash: st.Dash, vals: make([]float64, runs)}
		for i, xs := range a.series[name] {
			s.vals[i] = math.NaN()
			if len(xs) > 0 {
				s.vals[i] = analysis.Median(xs)
				lo, hi = math.Min(lo, s.vals[i]), math.Max(hi, s.vals[i])
			}
		}
		cv.Series = append(cv.Series, s)
	}
	return lo, hi
}

// changeMarks marks, between two runs, what changed from one to the next.
func changeMarks(changed []string, xOf func(int) float64) []mark {
	var out []mark
	for i := 1; i < len(changed); i++ {
		if changed[i] == "" {
			continue
		}
		m := mark{X: (xOf(i-1) + xOf(i)) / 2, Label: changed[i], Anchor: "start", DX: 3}
		if m.X > (plotL+plotR)/2 {
			m.Anchor, m.DX = "end", -3
		}
		for _, part := range strings.Split(changed[i], ", ") {
			name, rest, _ := strings.Cut(part, " ")
			_, to, _ := strings.Cut(rest, "→")
			m.Lines = append(m.Lines, name+"→"+to)
		}
		out = append(out, m)
	}
	return out
}

// draw makes the series' line and its points (every point of a short
// history, regressions always) and returns how many regressions it has.
func (s *series) draw(runs []*testrun.Run, a *samples, xOf func(int) float64, yOf func(float64) float64) (regressions int) {
	var path strings.Builder
	prev := math.NaN()
	for i, v := range s.vals {
		if math.IsNaN(v) {
			continue
		}
		x, y := xOf(i), yOf(v)
		cmd := "L"
		if path.Len() == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&path, "%s%.1f %.1f", cmd, x, y)
		worse := !math.IsNaN(prev) && isWorse(a.dir, prev, v)
		if worse {
			regressions++
		}
		if worse || len(runs) <= maxPointMarks {
			title := fmt.Sprintf("%s %s: %s %s", s.Name, runs[i].ID, num(v), a.unit)
			if worse {
				title += fmt.Sprintf(" — regression from %s (%+.1f%%)", num(prev), (v-prev)/math.Abs(prev)*100)
			}
			s.Points = append(s.Points, point{X: x, Y: y, Title: title, Worse: worse})
		}
		prev = v
	}
	s.Path = path.String()
	return regressions
}

// valueRows are the values behind a chart, newest run first, a value
// worse than the series' previous one marked.
func valueRows(runs []*testrun.Run, changed []string, ss []*series, dir string) []valueRow {
	var rows []valueRow
	for i := len(runs) - 1; i >= 0; i-- {
		row := valueRow{Date: runs[i].Date().Format(fullStamp), Sweep: runs[i].ID, Changed: changed[i]}
		for _, s := range ss {
			v := s.vals[i]
			if math.IsNaN(v) {
				row.Cells = append(row.Cells, valueCell{Text: "–"})
				continue
			}
			p := math.NaN()
			for j := i - 1; j >= 0 && math.IsNaN(p); j-- {
				p = s.vals[j]
			}
			row.Cells = append(row.Cells, valueCell{Text: num(v), Worse: !math.IsNaN(p) && isWorse(dir, p, v)})
		}
		rows = append(rows, row)
	}
	return rows
}

// isWorse reports whether v is worse than prev by more than RegressionStep
// in the metric's direction.
func isWorse(dir string, prev, v float64) bool {
	if prev == 0 {
		return false
	}
	d := (v - prev) / math.Abs(prev)
	return (dir == "lower" && d > RegressionStep) || (dir == "higher" && d < -RegressionStep)
}

// yAxis picks the range and about five round ticks from the data: never
// below zero for data that is not, never a flat line's ±1.
func yAxis(lo, hi float64) ([]tick, func(float64) float64) {
	span := hi - lo
	if span == 0 {
		span = math.Abs(hi) * 0.1
		if span == 0 {
			span = 1
		}
	}
	dlo := lo
	lo, hi = lo-span*0.1, hi+span*0.1
	if dlo >= 0 && lo < 0 {
		lo = 0
	}
	step := niceStep((hi - lo) / 4)
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step) * step
	yOf := func(v float64) float64 { return plotB - (v-lo)/(hi-lo)*float64(plotB-plotT) }
	var ticks []tick
	for v := lo; v <= hi+step/2; v += step {
		ticks = append(ticks, tick{Pos: yOf(v), Label: num(math.Round(v/step) * step)})
	}
	return ticks, yOf
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// xTicks labels at most eight runs, evenly spread, with date and time:
// the first and the last run always.
func xTicks(runs []*testrun.Run, xOf func(int) float64) []tick {
	n := len(runs)
	labels := min(n, 8)
	var out []tick
	for k := range labels {
		i := 0
		if labels > 1 {
			i = int(math.Round(float64(k*(n-1)) / float64(labels-1)))
		}
		d := runs[i].Date()
		t := tick{Pos: xOf(i), Label: d.Format(dateLayout), Label2: d.Format(timeLayout), Anchor: "middle"}
		if t.Pos > chartW-xLabelHalf {
			// Centred there, the label would run past the chart's edge
			// and be cut: it ends at its run instead.
			t.Anchor = "end"
		}
		out = append(out, t)
	}
	return out
}

// xLabelHalf is half the width of an x-axis label ("11-12", "09:30") in
// SVG units, with a little to spare.
const xLabelHalf = 20

// historyPage is the history page template (templates/history.html),
// parsed on first use.
var historyPage = sync.OnceValue(func() *template.Template {
	funcs := template.FuncMap{"add": func(a, b int) int { return a + b }, "sizeText": sweep.Size}
	return template.Must(template.New("history").Funcs(funcs).Parse(historyHTML))
})
