package reports

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// writeSummaryCSV writes the long-format rows of runs under one header.
func writeSummaryCSV(w io.Writer, runs []*testrun.Run) error {
	cw := newCSV(w)
	_ = cw.Write([]string{"sweep_id", "cell_id", "cell", "outcome", "detail", "case", "verdict", "metric", "value", "unit", "direction", "image_digest", "revisions", "class", "attempts"})
	for _, r := range runs {
		cases := testrun.CaseIDs(r)
		for _, c := range r.Cells {
			base := []string{r.ID, c.CellID, c.Name, c.Outcome, c.Detail}
			tail := []string{c.Image.Digest, c.Revisions(), c.Class, strconv.Itoa(c.Attempts)}
			verdicts := cellVerdicts(c, cases)
			byID := map[string]result.Case{}
			for _, cs := range c.Cases {
				byID[cs.ID] = cs
			}
			for i, id := range cases {
				if verdicts[i] == "–" {
					continue
				}
				cs := byID[id]
				if len(cs.Metrics) == 0 {
					_ = cw.Write(append(append(append([]string{}, base...), id, verdicts[i], "", "", "", ""), tail...))
					continue
				}
				for _, m := range cs.Metrics {
					_ = cw.Write(append(append(append([]string{}, base...), id, verdicts[i], m.Name, num(m.Value), m.Unit, m.Direction), tail...))
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeComparisonCSV writes a row per verdict change and per metric shown.
func writeComparisonCSV(w io.Writer, c *analysis.Comparison) error {
	cw := newCSV(w)
	_ = cw.Write([]string{"kind", "cell", "case", "metric", "baseline", "candidate", "delta_pct", "significance", "unit", "direction", "flag"})
	for _, v := range c.Verdicts {
		flag := ""
		if v.Worse {
			flag = "REGRESSION"
		}
		_ = cw.Write([]string{"verdict", v.Cell, v.Case, "", v.Baseline, v.Candidate, "", "", "", "", flag})
	}
	shown, _ := c.Shown()
	for _, m := range shown {
		_ = cw.Write([]string{"metric", m.Cell, m.Case, m.Metric, num(m.BaselineMed), num(m.CandidateMed),
			strconv.FormatFloat(m.DeltaPct, 'f', 2, 64), m.Significance, m.Unit, m.Direction, metricFlag(m)})
	}
	cw.Flush()
	return cw.Error()
}

// csvWriter writes CSV records whose text cells cannot run as spreadsheet
// formulas: a cell that is not a number and starts with =, +, -, @, a tab
// or a carriage return is written with a leading apostrophe, which a
// spreadsheet shows as text (text from result.json is the code under
// test's). Numbers, negative ones too, are written as they are.
type csvWriter struct{ *csv.Writer }

func newCSV(w io.Writer) csvWriter { return csvWriter{csv.NewWriter(w)} }

func (c csvWriter) Write(rec []string) error {
	out := rec
	for i, f := range rec {
		if formulaLike(f) {
			if &out[0] == &rec[0] {
				out = append([]string(nil), rec...)
			}
			out[i] = "'" + f
		}
	}
	return c.Writer.Write(out)
}

func formulaLike(f string) bool {
	if f == "" || !strings.ContainsRune("=+-@\t\r", rune(f[0])) {
		return false
	}
	_, err := strconv.ParseFloat(f, 64)
	return err != nil
}
