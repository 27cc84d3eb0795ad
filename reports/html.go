package reports

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// chart is one metric across runs, drawn as an inline SVG line.
type chart struct {
	Metric, Unit, Direction string
	Width, Height           int
	Path                    string
	Points                  []chartPoint
	Min, Max                string
}

type chartPoint struct {
	X, Y  float64
	Label string
}

// WriteHTML renders the history of runs as one self-contained HTML file: a
// table per run, and a chart per metric (the median over the run's cells)
// across runs. No scripts, styles or images are fetched.
func WriteHTML(w io.Writer, runs []*Run) error {
	type cellRow struct {
		Name, Outcome string
		Verdicts      []string
	}
	type runView struct {
		ID, Started, Counts string
		Cases               []string
		Cells               []cellRow
		Notes               []Note
	}
	var views []runView
	for _, r := range runs {
		cases := CaseIDs(r)
		v := runView{ID: r.ID, Started: r.Started, Counts: r.CountsLine(), Cases: cases, Notes: r.Notes}
		for _, c := range r.Cells {
			v.Cells = append(v.Cells, cellRow{c.Name, outcomeText(c), cellVerdicts(c, cases)})
		}
		views = append(views, v)
	}
	return htmlPage.Execute(w, struct {
		History []HistoryRow
		Runs    []runView
		Charts  []chart
	}{History(runs, time.Time{}, time.Time{}, nil), views, charts(runs)})
}

// charts makes one chart per metric with a value in at least one run.
func charts(runs []*Run) []chart {
	type series struct {
		unit, dir string
		vals      []float64 // per run; NaN where absent
	}
	all := map[string]*series{}
	for i, r := range runs {
		per := map[string][]float64{}
		for _, c := range r.Cells {
			for _, cs := range c.Cases {
				for name, m := range cs.Metrics {
					per[name] = append(per[name], m.Value)
					if all[name] == nil {
						s := &series{unit: m.Unit, dir: m.Direction, vals: make([]float64, len(runs))}
						for j := range s.vals {
							s.vals[j] = math.NaN()
						}
						all[name] = s
					}
				}
			}
		}
		for name, xs := range per {
			all[name].vals[i] = median(xs)
		}
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	const w, h, pad = 480, 160, 24
	var out []chart
	for _, n := range names {
		s := all[n]
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range s.vals {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if hi == lo {
			hi, lo = hi+1, lo-1
		}
		c := chart{Metric: n, Unit: s.unit, Direction: s.dir, Width: w, Height: h, Min: num(lo), Max: num(hi)}
		var path strings.Builder
		for i, v := range s.vals {
			if math.IsNaN(v) {
				continue
			}
			x := float64(pad)
			if len(runs) > 1 {
				x += float64(i) * float64(w-2*pad) / float64(len(runs)-1)
			}
			y := float64(h-pad) - (v-lo)/(hi-lo)*float64(h-2*pad)
			cmd := "L"
			if path.Len() == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x, y)
			c.Points = append(c.Points, chartPoint{x, y, fmt.Sprintf("%s: %s %s", runs[i].ID, num(v), s.unit)})
		}
		c.Path = strings.TrimSpace(path.String())
		out = append(out, c)
	}
	return out
}

var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kvsweep report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3}.PASS{background:#e6f4e6}.FAIL,.ERROR{background:#fbe3e3}.MISSING{background:#fff3cd}
.charts{display:flex;flex-wrap:wrap;gap:1.5em}figure{margin:0}svg{background:#fafafa;border:1px solid #ddd}
</style></head><body>
<h1>kvsweep report</h1>
<h2>Run history</h2>
<table><tr><th>date</th><th>sweep</th><th>topology</th><th>engine</th><th>image</th><th>revisions</th><th>cases passed</th><th>notes</th></tr>
{{range .History}}<tr><td>{{.Date}}</td><td>{{.Sweep}}</td><td>{{range $i, $t := .Topologies}}{{if $i}}, {{end}}{{$t}}{{end}}</td><td>{{range $i, $e := .Engines}}{{if $i}}, {{end}}{{$e}}{{end}}</td><td>{{.Image}}</td><td>{{.Revisions}}</td><td>{{.Passed}}/{{.Total}}{{if .Missing}} ({{.Missing}} cells missing){{end}}</td><td>{{len .Notes}}</td></tr>
{{end}}</table>
{{if .Charts}}<h2>Metrics across runs (median per run)</h2><div class="charts">
{{range .Charts}}<figure><figcaption><b>{{.Metric}}</b> {{.Unit}}{{if .Direction}} ({{.Direction}} is better){{end}}</figcaption>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="{{.Metric}}">
<text x="2" y="12" font-size="10">{{.Max}}</text><text x="2" y="{{.Height}}" font-size="10" dy="-2">{{.Min}}</text>
<path d="{{.Path}}" fill="none" stroke="#2b6cb0" stroke-width="2"/>
{{range .Points}}<circle cx="{{.X}}" cy="{{.Y}}" r="3" fill="#2b6cb0"><title>{{.Label}}</title></circle>{{end}}
</svg></figure>
{{end}}</div>{{end}}
{{range .Runs}}<h2>Sweep {{.ID}}</h2><p>{{.Started}} — {{.Counts}}</p>
<table><tr><th>cell</th><th>outcome</th>{{range .Cases}}<th>{{.}}</th>{{end}}</tr>
{{range .Cells}}<tr><td>{{.Name}}</td><td>{{.Outcome}}</td>{{range .Verdicts}}<td class="{{.}}">{{.}}</td>{{end}}</tr>
{{end}}</table>
{{if .Notes}}<h3>Notes</h3><ul class="notes">{{range .Notes}}<li>{{if .Cell}}<b>{{.Cell}}</b>: {{end}}{{.Text}} <small>({{.Author}}, {{.Time.UTC.Format "2006-01-02 15:04"}})</small></li>{{end}}</ul>{{end}}
{{end}}</body></html>
`))

// writeComparisonHTML renders a comparison as one self-contained page:
// what changed, the gate findings, verdict changes, then metric deltas.
func writeComparisonHTML(w io.Writer, c *Comparison) error {
	shown, unchanged := c.shown()
	return comparisonPage.Execute(w, struct {
		*Comparison
		Summary   string
		Shown     []MetricDelta
		Unchanged int
	}{c, c.Summary(), shown, unchanged})
}

var comparisonPage = template.Must(template.New("compare").Funcs(template.FuncMap{"num": num, "flag": metricFlag}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kvsweep: {{.Candidate}} vs {{.Baseline}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3}.worse{background:#fbe3e3}.better{background:#e6f4e6}
</style></head><body>
<h1>{{.Candidate}} vs {{.Baseline}}</h1>
<h2>What changed</h2>
{{if .Changes}}<table><tr><th>what</th><th>baseline</th><th>candidate</th></tr>
{{range .Changes}}<tr><td>{{.What}}</td><td>{{.Baseline}}</td><td>{{.Candidate}}</td></tr>
{{end}}</table>{{else}}<p>Baseline and candidate ran the same image, commits, kvsweep, cluster, nodes and spec.</p>{{end}}
<p>{{.Summary}}</p>
<ul>{{range .OnlyInBaseline}}<li>only in the baseline: {{.}}</li>{{end}}{{range .OnlyInCandidate}}<li>only in the candidate: {{.}}</li>{{end}}
{{range .MissingCases}}<li>the candidate lacks a case of the baseline: {{.}}</li>{{end}}{{range .VerdictsOnly}}<li>verdicts only, metrics not compared: {{.}}</li>{{end}}</ul>
{{if .Verdicts}}<h2>Verdict changes</h2><table><tr><th>cell</th><th>case</th><th>baseline</th><th>candidate</th></tr>
{{range .Verdicts}}<tr{{if .Worse}} class="worse"{{end}}><td>{{.Cell}}</td><td>{{.Case}}</td><td>{{.Baseline}}</td><td>{{.Candidate}}</td></tr>
{{end}}</table>{{end}}
{{if .Shown}}<h2>Metrics</h2><table><tr><th>cell</th><th>case</th><th>metric</th><th>baseline</th><th>candidate</th><th>delta</th><th>significance</th><th>unit</th><th></th></tr>
{{range .Shown}}<tr{{if .Regression}} class="worse"{{else if .Improvement}} class="better"{{end}}><td>{{.Cell}}</td><td>{{.Case}}</td><td>{{.Metric}}</td><td>{{num .BaselineMed}}</td><td>{{num .CandidateMed}}</td><td>{{printf "%+.2f%%" .DeltaPct}}</td><td>{{.Significance}}</td><td>{{.Unit}}{{if .Direction}}, {{.Direction}} is better{{end}}</td><td>{{flag .}}</td></tr>
{{end}}</table>{{end}}
{{if .Unchanged}}<p>{{.Unchanged}} unchanged metric(s) not shown (--all shows them).</p>{{end}}
</body></html>
`))
