package telemetry

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

var howDoc = map[How]string{
	Ratio:       "increase of the counter `%s` / increase of `%s`",
	Increase:    "increase of the counter `%s`",
	Peak:        "highest sample of the gauge `%s`, per series",
	MeanNonZero: "mean of the non-zero samples of the gauge `%s` (overwritten each batch, 0 between)",
	Last:        "last sample of the gauge `%s` (cumulative since start), mean over series",
	BySource:    "increase of the counter `%s` per `%s`",
}

// catalogRows are the catalog as docs/results.md's table has it.
func catalogRows() []string {
	var out []string
	for _, e := range Catalog {
		how := fmt.Sprintf(howDoc[e.How], e.Num, e.Den)
		if e.How == BySource {
			how = fmt.Sprintf(howDoc[e.How], e.Num, e.Label)
		}
		how = strings.ReplaceAll(how, "%!s(MISSING)", "")
		if strings.Contains(how, "%!") {
			how = strings.SplitN(how, "%!", 2)[0]
		}
		fig := "`" + e.Figure + "`"
		if e.How == BySource {
			fig = "`" + e.Figure + "<" + e.Label + ">`"
		}
		typ := "gauge"
		if counters[e.Num] {
			typ = "counter"
		}
		out = append(out, fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s | %s |", e.ID, e.Engine, e.Versions, fig, typ, e.Unit, how))
	}
	return out
}

// docs/results.md's catalog table is the catalog, row for row.
func TestCatalogDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/results.md")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(catalogRows(), "\n")
	if !strings.Contains(string(b), want) {
		t.Errorf("docs/results.md's catalog table is not:\n%s", want)
	}
}
