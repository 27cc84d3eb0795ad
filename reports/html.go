package reports

import (
	_ "embed"
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

// The pages are html/template files beside the code (templates/*.html),
// embedded, so a page reads as HTML and the binary still carries it.
var (
	//go:embed templates/comparison.html
	comparisonHTML string
	//go:embed templates/history.html
	historyHTML string
)

// comparisonPage is the comparison's page template, parsed on first use.
var comparisonPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("compare").Funcs(template.FuncMap{"num": num, "flag": metricFlag}).Parse(comparisonHTML))
})
