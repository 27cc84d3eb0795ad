package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/internal/table"
)

// The frontier page: per cell, throughput (y) against the latency the
// SLOs judge first (x), one dot per probe at the means over its repeats
// with whiskers over their 95 % intervals, filled where the probe met
// every SLO and hollow where it broke one, the load beside it; the
// Pareto frontier (the probes no other beats on both) joined by a line;
// the operating point ringed; the latency SLO a dashed line. Given two
// searches, both on the same axes, baseline and candidate, with the
// comparison's sentence over each chart. One file, no scripts and
// nothing fetched.

//go:embed templates/frontier.html
var frontierHTML string

// frontier chart geometry, in SVG user units; the SVG scales to the window.
const (
	fchartW, fchartH               = 640, 340
	fplotL, fplotR, fplotT, fplotB = 64, 624, 16, 296
)

// The sides' colours, the operating point's ring and the SLO's line (the
// page's style sheet has the same; the browser test finds them on screen).
const (
	candidateColor = "#1f77b4"
	baselineColor  = "#ff7f0e"
	operatingColor = "#2ca02c"
	sloColor       = "#d00"
)

type frontierDot struct {
	X, Y         float64
	Whiskers     string // the path of the 95 % intervals' whiskers
	Class, Label string
	Title        string
}

type frontierSeries struct {
	Name, Color, Class string
	Pareto             string // the frontier's path
	Dots               []frontierDot
	Operating          *frontierDot
	PointText, Note    string
	Undrawn            int // probes without both figures
}

type frontierRows struct {
	Name   string
	Header []string
	Rows   [][]string
}

type frontierChart struct {
	ID, Cell, Sentence, XTitle, YTitle string
	W, H, L, R, T, B                   int
	XTicks, YTicks                     []tick
	SLO                                *tick // the latency SLO's line, Pos on x
	Empty                              bool  // no side has a probe to draw
	Series                             []frontierSeries
	Tables                             []frontierRows
}

type frontierView struct {
	Title     string
	Heads     []string // per side: axis, SLOs, repeats, stopped
	SLODiffer string
	Charts    []frontierChart
	Colors    map[string]string
}

// writeFrontierHTML writes the page of cand, with base on the same axes
// and c's sentences when two searches are compared.
func writeFrontierHTML(w io.Writer, cand, base *FrontierReport, c *FrontierComparison) error {
	sides := []*FrontierReport{cand}
	title := "kvsweep search: " + cand.title()
	if base != nil {
		sides = []*FrontierReport{base, cand}
		title = "kvsweep search: " + c.Candidate + " vs " + c.Baseline
	}
	v := frontierView{Title: table.Visible(title), Colors: map[string]string{"operating": operatingColor, "slo": sloColor}}
	for _, s := range sides {
		head := fmt.Sprintf("%s: load %s (%s); SLOs %s; %d repeat(s) per probe.", sideName(s, base, c), s.Axis, s.Unit, sloText(s.SLO), s.Repeats)
		if s.Stopped != "" {
			head += " Stopped before every cell had its point: " + s.Stopped + "."
		}
		v.Heads = append(v.Heads, table.Visible(head))
	}
	if c != nil {
		v.SLODiffer = table.Visible(c.SLODiffer)
	}
	for i, id := range cellIDs(sides) {
		ch := frontierChart{ID: "cell-" + strconv.Itoa(i), Cell: table.Visible(cellTitle(sides, id)), W: fchartW, H: fchartH, L: fplotL, R: fplotR, T: fplotT, B: fplotB,
			XTitle: cand.Latency + " (mean over repeats)", YTitle: frontier.Throughput + " (mean over repeats)"}
		if c != nil {
			if k := slices.IndexFunc(c.Cells, func(p PointCompared) bool { return p.Cell == id }); k >= 0 {
				ch.Sentence = table.Visible(c.Cells[k].Sentence)
			}
		}
		ch.draw(sides, id, base, c)
		ch.Empty = !slices.ContainsFunc(ch.Series, func(s frontierSeries) bool { return len(s.Dots) > 0 })
		v.Charts = append(v.Charts, ch)
	}
	return frontierPage().Execute(w, v)
}

// sideName is a side as the page names it.
func sideName(s, base *FrontierReport, c *FrontierComparison) string {
	switch {
	case c == nil:
		return s.title()
	case s == base:
		return c.Baseline
	}
	return c.Candidate
}

// cellIDs is every cell of the sides, in the order the first side that
// has it lists it.
func cellIDs(sides []*FrontierReport) []string {
	var ids []string
	seen := map[string]bool{}
	for _, s := range sides {
		for _, c := range s.Cells {
			if !seen[c.ID] {
				seen[c.ID] = true
				ids = append(ids, c.ID)
			}
		}
	}
	return ids
}

// cellTitle is the name the first side that has cell id gives it.
func cellTitle(sides []*FrontierReport, id string) string {
	for _, s := range sides {
		for _, c := range s.Cells {
			if c.ID == id && c.Title != "" {
				return c.Title
			}
		}
	}
	return id
}

// draw lays out the chart of cell id: the axes from every side's probes
// and the SLO, then each side's dots, frontier and operating point.
func (ch *frontierChart) draw(sides []*FrontierReport, id string, base *FrontierReport, c *FrontierComparison) {
	lat := sides[len(sides)-1].Latency
	var xMax, yMax float64
	cells := make([]*CellReport, len(sides))
	for i, s := range sides {
		if k := slices.IndexFunc(s.Cells, func(c CellReport) bool { return c.ID == id }); k >= 0 {
			cells[i] = &s.Cells[k]
			for _, p := range cells[i].Probes {
				x, okx := p.Figures[lat]
				y, oky := p.Figures[frontier.Throughput]
				if okx && oky {
					xMax, yMax = max(xMax, x.Mean, x.High), max(yMax, y.Mean, y.High)
				}
			}
		}
	}
	sloMax := math.NaN()
	if k := slices.IndexFunc(sides[len(sides)-1].SLO, func(s frontier.SLO) bool { return s.Metric == lat }); k >= 0 {
		sloMax = sides[len(sides)-1].SLO[k].Max
		xMax = max(xMax, sloMax)
	}
	var xOf, yOf func(float64) float64
	ch.XTicks, xOf = linAxis(xMax*1.05, fplotL, fplotR)
	ch.YTicks, yOf = linAxis(yMax*1.1, fplotB, fplotT)
	if !math.IsNaN(sloMax) {
		ch.SLO = &tick{Pos: xOf(sloMax), Label: "SLO " + lat + " ≤ " + num(sloMax)}
	}
	for i, s := range sides {
		color, class := candidateColor, "candidate"
		if base != nil && s == base {
			color, class = baselineColor, "baseline"
		}
		fs := frontierSeries{Name: table.Visible(sideName(s, base, c)), Color: color, Class: class, PointText: "not searched"}
		if cells[i] != nil {
			fs.plot(cells[i], lat, s.Unit, xOf, yOf)
			ch.Tables = append(ch.Tables, probeRows(fs.Name, s, cells[i]))
		}
		ch.Series = append(ch.Series, fs)
	}
}

// plot places a side's probes of one cell.
func (fs *frontierSeries) plot(cell *CellReport, lat, unit string, xOf, yOf func(float64) float64) {
	fs.PointText, fs.Note = cell.PointText, table.Visible(cell.Note)
	var front []frontierDot
	for _, p := range cell.Probes {
		x, okx := p.Figures[lat]
		y, oky := p.Figures[frontier.Throughput]
		if !okx || !oky {
			fs.Undrawn++
			continue
		}
		d := frontierDot{X: xOf(x.Mean), Y: yOf(y.Mean), Class: "probe meets", Label: num(p.Load),
			Title: table.Visible(fmt.Sprintf("load %s %s: %s %s, %s %s; %s", num(p.Load), unit, frontier.Throughput, num(y.Mean), lat, num(x.Mean), verdictText(p)))}
		if x.High > x.Low {
			d.Whiskers = fmt.Sprintf("M%v %vH%v", xOf(x.Low), d.Y, xOf(x.High))
		}
		if y.High > y.Low {
			d.Whiskers += fmt.Sprintf("M%v %vV%v", d.X, yOf(y.Low), yOf(y.High))
		}
		if !p.Meets {
			d.Class = "probe broken"
		}
		if p.Noisy {
			d.Class += " noisy"
		}
		fs.Dots = append(fs.Dots, d)
		if p.Frontier {
			front = append(front, d)
		}
		if p.Operating {
			op := d
			fs.Operating = &op
		}
	}
	slices.SortFunc(front, func(a, b frontierDot) int {
		if a.X != b.X {
			return cmpFloat(a.X, b.X)
		}
		return cmpFloat(b.Y, a.Y)
	})
	var path strings.Builder
	for i, d := range front {
		if i == 0 {
			fmt.Fprintf(&path, "M%.1f %.1f", d.X, d.Y)
			continue
		}
		// A step: the throughput reached holds until the next point's latency.
		fmt.Fprintf(&path, " H%.1f V%.1f", d.X, d.Y)
	}
	fs.Pareto = path.String()
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// probeRows is the table under a chart: one side's probes of the cell.
func probeRows(name string, s *FrontierReport, c *CellReport) frontierRows {
	cols := figureColumns(s.SLO)
	t := frontierRows{Name: table.Visible(name + ": operating point " + c.PointText), Header: append(append([]string{"round", "load (" + s.Unit + ")", "repeats"}, cols...), "SLOs", "frontier")}
	if c.Note != "" {
		t.Name += " (" + table.Visible(c.Note) + ")"
	}
	for _, p := range c.Probes {
		row := []string{strconv.Itoa(p.Round), num(p.Load), strconv.Itoa(p.Repeats)}
		for _, k := range cols {
			st, ok := p.Figures[k]
			row = append(row, statText(st, ok))
		}
		row = append(row, verdictText(p), frontierMark(p))
		for i := range row {
			row[i] = table.Visible(row[i])
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// linAxis maps 0..hi onto from..to (SVG units) with round ticks.
func linAxis(hi, from, to float64) ([]tick, func(float64) float64) {
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	step := niceStep(hi / 5)
	top := math.Ceil(hi/step) * step
	of := func(v float64) float64 { return math.Round((from+v/top*(to-from))*10) / 10 }
	var ticks []tick
	for k := 0.0; k*step <= top+step/2; k++ {
		ticks = append(ticks, tick{Pos: of(k * step), Label: num(k * step), Anchor: "middle"})
	}
	return ticks, of
}

// frontierPage is the frontier page template (templates/frontier.html),
// parsed on first use.
var frontierPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("frontier").Parse(frontierHTML))
})
