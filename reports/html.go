package reports

import (
	"html/template"
	"io"
	"sync"

	"github.com/kvsweep/kvsweep/analysis"
)

// writeComparisonHTML renders a comparison as one self-contained page:
// what changed, the gate findings, verdict changes, then metric deltas.
func writeComparisonHTML(w io.Writer, c *analysis.Comparison) error {
	shown, unchanged := c.Shown()
	return comparisonPage().Execute(w, struct {
		*analysis.Comparison
		Summary   string
		Shown     []analysis.MetricDelta
		Unchanged int
	}{c, c.Summary(), shown, unchanged})
}

var comparisonPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("compare").Funcs(template.FuncMap{"num": num, "flag": metricFlag}).Parse(`<!DOCTYPE html>
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
})
