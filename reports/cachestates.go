package reports

import (
	"bytes"

	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/testrun"
)

// writeCacheStates writes a summary's cache states (markdown, table): for
// each case that declares one, the state, what the job did to the caches
// before it and the case's verdict; nothing when no cell has any, so the
// summaries of specs without cache states stay as they were.
func writeCacheStates(b *bytes.Buffer, format Format, r *testrun.Run) error {
	total := 0
	for _, c := range r.Cells {
		total += len(c.Cache)
	}
	if total == 0 {
		return nil
	}
	if format == "markdown" {
		b.WriteString("\n### Cache states\n")
	} else {
		b.WriteString("\nCache states\n")
	}
	b.WriteString("\n")
	fit := fitter{format: format, limit: StepSummaryLimit - b.Len() - 4096}
	var rows [][]string
rows:
	for _, c := range r.Cells {
		verdicts := map[string]string{}
		for _, cs := range c.Cases {
			verdicts[cs.ID] = cs.Verdict
		}
		for _, cc := range c.Cache {
			row := []string{c.Name, cc.Case, cc.State, cc.Before(), verdicts[cc.Case]}
			if !fit.fits(row) {
				break rows
			}
			rows = append(rows, row)
		}
	}
	if err := table.Write(b, table.Format(format), []string{"cell", "case", "cache", "before the case", "verdict"}, rows); err != nil {
		return err
	}
	cutNote(b, total-len(rows))
	return nil
}
