package reports

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/internal/table"
)

// FrontierReport is a search's report, the JSON form of `kvsweep report`
// on a search directory: the frontier's cells with, per probe, the
// figures over its repeats, whether it lies on the Pareto frontier of
// throughput against the latency figure Latency, and which probe is the
// operating point.
type FrontierReport struct {
	Name    string         `json:"name"`
	Label   string         `json:"label,omitempty"`
	Axis    frontier.Axis  `json:"axis"`
	Unit    string         `json:"unit"`
	Latency string         `json:"latency"` // the figure the frontier is drawn against
	SLO     []frontier.SLO `json:"slo"`
	Repeats int            `json:"repeats"`
	Stopped string         `json:"stopped,omitempty"`
	Cells   []CellReport   `json:"cells"`
}

// CellReport is one cell of a search's report.
type CellReport struct {
	ID        string          `json:"id"`
	Title     string          `json:"title"` // the cell's name and id, as the reports show it
	Point     *frontier.Point `json:"point,omitempty"`
	PointText string          `json:"point_text"` // "12.0 ± 0.4 req/s", or "none"
	Note      string          `json:"note,omitempty"`
	Probes    []ProbeReport   `json:"probes"`
}

// ProbeReport is one probe of a cell: each figure's mean (and interval)
// over its repeats, from the search's Stats or, where it has none, the
// mean of the repeats' values.
type ProbeReport struct {
	Round     int                      `json:"round"`
	Load      float64                  `json:"load"`
	Repeats   int                      `json:"repeats"`
	Figures   map[string]frontier.Stat `json:"figures"`
	Meets     bool                     `json:"meets"`
	Broken    []string                 `json:"broken,omitempty"`
	Noisy     bool                     `json:"noisy,omitempty"`
	Infra     bool                     `json:"infra,omitempty"` // every repeat failed outside the test
	Frontier  bool                     `json:"frontier"`        // not dominated: no other probe has more throughput at no more latency
	Operating bool                     `json:"operating"`       // the operating point's probe
}

// NewFrontierReport derives the report of f (which CheckFrontier passed).
func NewFrontierReport(f *frontier.Frontier) *FrontierReport {
	r := &FrontierReport{Name: f.Name, Label: f.Label, Axis: f.Axis, Unit: f.Axis.Unit(), Latency: latencyFigure(f),
		SLO: append([]frontier.SLO{}, f.SLO...), Repeats: f.Repeats, Stopped: f.Stopped, Cells: make([]CellReport, 0, len(f.Cells))}
	for _, c := range f.Cells {
		cr := CellReport{ID: c.ID, Title: c.Title(), Point: c.Point, PointText: pointText(c.Point, r.Unit), Note: c.Note,
			Probes: make([]ProbeReport, 0, len(c.Probes))}
		op := -1
		for i, p := range c.Probes {
			pr := ProbeReport{Round: p.Round, Load: p.Load, Repeats: len(p.Repeats), Figures: probeFigures(p),
				Meets: p.Meets, Broken: p.Broken, Noisy: p.Noisy, Infra: p.Infra}
			if c.Point != nil && p.Meets && p.Load == c.Point.Load {
				op = i
			}
			cr.Probes = append(cr.Probes, pr)
		}
		if op >= 0 {
			cr.Probes[op].Operating = true
		}
		for i, on := range pareto(cr.Probes, r.Latency) {
			cr.Probes[i].Frontier = on
		}
		r.Cells = append(r.Cells, cr)
	}
	return r
}

// latencyFigure is the latency the frontier is drawn against: the first
// SLO on a figure in milliseconds, else TTFT p99.
func latencyFigure(f *frontier.Frontier) string {
	for _, s := range f.SLO {
		if strings.HasSuffix(s.Metric, "_ms") {
			return s.Metric
		}
	}
	return frontier.TTFTP99
}

// probeFigures is each figure of p over its repeats.
func probeFigures(p frontier.Probe) map[string]frontier.Stat {
	out := map[string]frontier.Stat{}
	for k, s := range p.Stats {
		if s.N > 0 {
			out[k] = s
		}
	}
	sums := map[string][]float64{}
	for _, r := range p.Repeats {
		for k, v := range r.Figures {
			if _, ok := out[k]; !ok {
				sums[k] = append(sums[k], v)
			}
		}
	}
	for k, vs := range sums {
		m := 0.0
		for _, v := range vs {
			m += v / float64(len(vs))
		}
		out[k] = frontier.Stat{N: len(vs), Mean: m, Low: m, High: m}
	}
	return out
}

// pareto marks the probes no other probe dominates: none has at least
// the throughput at no more latency, and more of one or less of the
// other. A probe without both figures is on no frontier.
func pareto(ps []ProbeReport, latency string) []bool {
	on := make([]bool, len(ps))
	for i, p := range ps {
		x, okx := p.Figures[latency]
		y, oky := p.Figures[frontier.Throughput]
		if !okx || !oky {
			continue
		}
		on[i] = !slices.ContainsFunc(ps, func(q ProbeReport) bool {
			qx, okx := q.Figures[latency]
			qy, oky := q.Figures[frontier.Throughput]
			return okx && oky && qy.Mean >= y.Mean && qx.Mean <= x.Mean && (qy.Mean > y.Mean || qx.Mean < x.Mean)
		})
	}
	return on
}

// pointText is an operating point as people read it: the load ± half its
// 95 % interval, both to the interval's first significant digit (two
// where it is a 1): "12.0 ± 0.4 req/s".
func pointText(p *frontier.Point, unit string) string {
	if p == nil {
		return "none"
	}
	return pmText(p) + " " + unit
}

// pmText is a point with its interval: "12.0 ± 0.4" where the interval
// is even about the load, else "16 (16–17)": a search's point usually
// sits at its interval's low end (the highest load that met every SLO,
// below the lowest that broke one), and "±" would hide half the interval.
func pmText(p *frontier.Point) string {
	if below, above := p.Load-p.Low, p.High-p.Load; math.Abs(below-above) > 1e-9*max(1, math.Abs(p.Load)) {
		return num(p.Load) + " (" + num(p.Low) + "–" + num(p.High) + ")"
	}
	half := (p.High - p.Low) / 2
	// 0.19999999999999996 is 0.2: ten digits are more than any interval has.
	half, _ = strconv.ParseFloat(strconv.FormatFloat(half, 'g', 10, 64), 64)
	if half <= 0 {
		return num(p.Load) + " ± 0"
	}
	e := math.Floor(math.Log10(half))
	d := -int(e)
	if half/math.Pow(10, e) < 2 {
		d++ // 0.15, not 0.2
	}
	d = max(0, min(d, 6))
	return strconv.FormatFloat(p.Load, 'f', d, 64) + " ± " + strconv.FormatFloat(half, 'f', d, 64)
}

// statText is a figure over a probe's repeats: the mean, with its 95 %
// interval where the repeats give one; "–" where the probe has none.
func statText(s frontier.Stat, ok bool) string {
	switch {
	case !ok:
		return "–"
	case s.N < 2 || s.Low == s.High:
		return num(s.Mean)
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.Mean), num(s.Low), num(s.High))
}

// figureColumns are the figures a probe table shows: throughput, TTFT
// and ITL p99, then any other figure an SLO judges.
func figureColumns(slo []frontier.SLO) []string {
	cols := []string{frontier.Throughput, frontier.TTFTP99, frontier.ITLP99}
	for _, s := range slo {
		if !slices.Contains(cols, s.Metric) {
			cols = append(cols, s.Metric)
		}
	}
	return cols
}

// sloText is the SLOs as a spec gives them: "ttft_p99_ms ≤ 500".
func sloText(slo []frontier.SLO) string {
	if len(slo) == 0 {
		return "none"
	}
	parts := make([]string, len(slo))
	for i, s := range slo {
		parts[i] = s.Metric + " ≤ " + num(s.Max)
	}
	return strings.Join(parts, ", ")
}

// verdictText says whether a probe met the SLOs, which broke, and noise.
func verdictText(p ProbeReport) string {
	s := "meets"
	switch {
	case p.Infra:
		s = "not judged: every repeat failed outside the test"
	case !p.Meets:
		s = "broken"
		if len(p.Broken) > 0 {
			s += ": " + strings.Join(p.Broken, "; ")
		}
	}
	if p.Noisy {
		s += " (noisy: the repeats spread past the search's bound)"
	}
	return s
}

func frontierMark(p ProbeReport) string {
	var m []string
	if p.Operating {
		m = append(m, "operating point")
	}
	if p.Frontier {
		m = append(m, "frontier")
	}
	return strings.Join(m, ", ")
}

func (r *FrontierReport) title() string {
	if r.Label != "" && r.Label != r.Name {
		return r.Name + " (" + r.Label + ")"
	}
	return r.Name
}

// WriteFrontier writes a search's report of f in format: markdown, a
// table, CSV, JSON or the HTML frontier. f is checked first
// (CheckFrontier); JUnit is refused, a search has no test cases.
func WriteFrontier(w io.Writer, format Format, f *frontier.Frontier) error {
	if err := CheckFrontier(f); err != nil {
		return err
	}
	r := NewFrontierReport(f)
	switch format {
	case JSON:
		return writeJSON(w, r)
	case CSV:
		return writeFrontierCSV(w, r)
	case HTML:
		return writeFrontierHTML(w, r, nil, nil)
	case Markdown, Table:
		var b bytes.Buffer
		if err := writeFrontierText(&b, format, r); err != nil {
			return err
		}
		return writeLimited(w, format, b.Bytes())
	}
	return fail.Usagef("--format %s: a search's report is markdown, table, csv, json or html", format)
}

// writeFrontierText writes the head of the report, a table of the cells'
// operating points, then each cell's probes.
func writeFrontierText(b *bytes.Buffer, format Format, r *FrontierReport) error {
	if format == Markdown {
		fmt.Fprintf(b, "## Operating points: %s\n\n", table.Visible(r.title()))
	} else {
		fmt.Fprintf(b, "Operating points: %s\n\n", table.Visible(r.title()))
	}
	fmt.Fprintf(b, "Load: %s (%s). SLOs: %s. %d repeat(s) per probe. The frontier is throughput against %s.\n",
		r.Axis, r.Unit, table.Visible(sloText(r.SLO)), r.Repeats, table.Visible(r.Latency))
	if r.Stopped != "" {
		fmt.Fprintf(b, "\nStopped before every cell had its point: %s.\n", table.Visible(r.Stopped))
	}
	b.WriteString("\n")
	rows := make([][]string, 0, len(r.Cells))
	for _, c := range r.Cells {
		row := []string{c.Title, c.PointText, "–", "–", "–", strconv.Itoa(len(c.Probes)), c.Note}
		if p := c.Point; p != nil {
			row[2] = num(p.Low) + "–" + num(p.High)
			if p.MinDetectable > 0 {
				row[3] = num(p.MinDetectable)
			}
			row[4] = statText(p.Throughput, p.Throughput.N > 0)
		}
		rows = append(rows, row)
	}
	if err := table.Write(b, table.Format(format), []string{"cell", "operating point", "95 % interval", "smallest detectable change",
		"throughput there (req/s)", "probes", "note"}, rows); err != nil {
		return err
	}
	cols := figureColumns(r.SLO)
	for _, c := range r.Cells {
		head := table.Visible(c.Title) + ": operating point " + c.PointText
		if format == Markdown {
			fmt.Fprintf(b, "\n### %s\n\n", head)
		} else {
			fmt.Fprintf(b, "\n%s\n", head)
		}
		if len(c.Probes) == 0 {
			fmt.Fprintf(b, "No probe ran (%s).\n", table.Visible(c.Note))
			continue
		}
		if err := writeProbeTable(b, format, r, c, cols); err != nil {
			return err
		}
	}
	return nil
}

func writeProbeTable(b *bytes.Buffer, format Format, r *FrontierReport, c CellReport, cols []string) error {
	header := append([]string{"round", "load (" + r.Unit + ")", "repeats"}, cols...)
	header = append(header, "SLOs", "frontier")
	rows := make([][]string, 0, len(c.Probes))
	for _, p := range c.Probes {
		row := []string{strconv.Itoa(p.Round), num(p.Load), strconv.Itoa(p.Repeats)}
		for _, k := range cols {
			s, ok := p.Figures[k]
			row = append(row, statText(s, ok))
		}
		rows = append(rows, append(row, verdictText(p), frontierMark(p)))
	}
	return table.Write(b, table.Format(format), header, rows)
}

// writeFrontierCSV writes a row per probe, its cell's operating point on
// each (a cell without probes: one row with its point and note).
func writeFrontierCSV(w io.Writer, r *FrontierReport) error {
	cw := newCSV(w)
	_ = cw.Write([]string{"search", "label", "axis", "unit", "cell", "round", "load", "repeats",
		"throughput_req_s", "throughput_low", "throughput_high", "ttft_p99_ms", "itl_p99_ms", "failed",
		"meets", "broken", "noisy", "frontier", "operating", "point_load", "point_low", "point_high", "min_detectable", "note"})
	for _, c := range r.Cells {
		point := []string{"", "", "", ""}
		if p := c.Point; p != nil {
			point = []string{num(p.Load), num(p.Low), num(p.High), num(p.MinDetectable)}
		}
		head := []string{r.Name, r.Label, string(r.Axis), r.Unit, c.ID}
		if len(c.Probes) == 0 {
			_ = cw.Write(slices.Concat(head, make([]string, 14), point, []string{c.Note}))
		}
		for _, p := range c.Probes {
			t, ok := p.Figures[frontier.Throughput]
			figs := []string{csvMean(p, frontier.Throughput), "", "", csvMean(p, frontier.TTFTP99), csvMean(p, frontier.ITLP99), csvMean(p, frontier.Failed)}
			if ok {
				figs[1], figs[2] = num(t.Low), num(t.High)
			}
			row := slices.Concat(head, []string{strconv.Itoa(p.Round), num(p.Load), strconv.Itoa(p.Repeats)}, figs,
				[]string{strconv.FormatBool(p.Meets), strings.Join(p.Broken, "; "), strconv.FormatBool(p.Noisy),
					strconv.FormatBool(p.Frontier), strconv.FormatBool(p.Operating)}, point, []string{c.Note})
			_ = cw.Write(row)
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvMean is a figure's mean over a probe's repeats; empty without one.
func csvMean(p ProbeReport, figure string) string {
	s, ok := p.Figures[figure]
	if !ok {
		return ""
	}
	return num(s.Mean)
}
