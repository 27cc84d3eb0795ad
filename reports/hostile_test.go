package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// hostile is text a harness under test could write into result.json: a
// terminal title change, a screen clear, a table breaker, a bidirectional
// override and a spreadsheet formula.
const hostile = "=cmd|'/c calc'!A0 \x1b]0;pwned\x07\x1b[2J|\n|\u202e"

// withText returns copies of the committed base and cand runs whose
// free-text fields (a case message, a metric's name and unit, a
// parameter, the nodes, a note) are text.
func withText(t *testing.T, text string) (base, cand *testrun.Run) {
	t.Helper()
	set := func(r *testrun.Run) *testrun.Run {
		r.Notes = []testrun.Note{{Sweep: r.ID, Author: "a", Text: text}}
		for i := range r.Cells {
			c := &r.Cells[i]
			c.Nodes = text
			params := map[string]string{}
			for k, v := range c.Params {
				params[k] = v
			}
			params["note"] = text
			c.Params = params
			cases := append([]result.Case(nil), c.Cases...)
			for j := range cases {
				cases[j].Message = text
				ms := append(result.Metrics(nil), cases[j].Metrics...)
				ms.Set(result.Metric{Name: "m" + text, Value: 1, Unit: text, Direction: "lower"})
				cases[j].Metrics = ms
			}
			c.Cases = cases
		}
		return r
	}
	return set(collected(t, "base")), set(collected(t, "cand"))
}

// render writes the runs and their comparison in format.
func render(t *testing.T, format Format, base, cand *testrun.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteRuns(&b, format, []*testrun.Run{base, cand}, true, "sel"); err != nil {
		t.Fatal(err)
	}
	if format != "html" {
		c := analysis.Compare("base", []*testrun.Run{base}, "cand", []*testrun.Run{cand}, analysis.CompareOptions{All: true, Ignore: []string{"repeat"}})
		if err := WriteComparison(&b, format, c); err != nil {
			t.Fatal(err)
		}
	}
	if format != "junit" && format != "html" {
		figures := []string{"m" + base.Notes[0].Text} // the metric withText added
		if err := WriteHistory(&b, format, analysis.History([]*testrun.Run{base, cand}, figures), figures); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// Text from result.json reaches no terminal raw: the table and markdown
// formats show control characters as escapes and keep their tables whole
// (as many lines as for plain text), JSON keeps the text verbatim, and a
// CSV cell that would run as a spreadsheet formula is written as text.
func TestHostileText(t *testing.T) {
	base, cand := withText(t, hostile)
	plainBase, plainCand := withText(t, "=cmd|'/c calc'!A0 x]0;pwnedxx[2J|x|x")
	for _, format := range []Format{"table", "markdown"} {
		out := render(t, format, base, cand)
		for _, r := range out {
			if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x202e) {
				t.Errorf("%s: a raw control character %U", format, r)
				break
			}
		}
		if !strings.Contains(out, `\x1b]0;pwned\x07`) {
			t.Errorf("%s: the escape sequence is not shown", format)
		}
		if got, want := strings.Count(out, "\n"), strings.Count(render(t, format, plainBase, plainCand), "\n"); got != want {
			t.Errorf("%s: %d lines, %d with plain text: a table was broken", format, got, want)
		}
	}
	var doc []testrun.Run
	var b bytes.Buffer
	if err := WriteRuns(&b, "json", []*testrun.Run{base}, true, "sel"); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || doc[0].Cells[0].Cases[0].Message != hostile || doc[0].Cells[0].Nodes != hostile {
		t.Errorf("json: the text is not kept verbatim (%v)", err)
	}
	b.Reset()
	if err := WriteRuns(&b, "csv", []*testrun.Run{base}, true, "sel"); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rec := range recs[1:] {
		for _, f := range rec {
			if strings.HasPrefix(f, "=") || strings.HasPrefix(f, "+") || strings.HasPrefix(f, "@") {
				t.Errorf("csv: a formula cell %q", f)
			}
			found = found || f == "'"+hostile
		}
	}
	if !found {
		t.Errorf("csv: the message is not written as text ('%q)", hostile)
	}
}
