package reports

import (
	"bytes"
	"strings"

	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/testrun"
)

// workerFigures are the columns of the per-worker table, in order: the
// figures package telemetry derives per worker.
var workerFigures = []string{"prefix_cache_hit_rate", "kv_connector_hit_rate", "kv_cache_usage_peak", "preemptions"}

// writeWorkers writes a summary's per-worker telemetry (markdown,
// table): a row per worker and case window of each cell that has
// several workers (a 2P+1D cell: both prefill workers and the decode
// worker), with the catalog entries that gave the figures; a figure the
// worker did not report is "–". As many rows as fit the step summary.
func writeWorkers(b *bytes.Buffer, format Format, r *testrun.Run) error {
	var rows [][]string
	total := 0
	fit := fitter{format: format, limit: StepSummaryLimit - b.Len() - 4096}
	for _, c := range r.Cells {
		for _, row := range workerRows(c) {
			total++
			if row = append([]string{c.Name}, row...); fit.fits(row) {
				rows = append(rows, row)
			}
		}
	}
	if total == 0 {
		return nil
	}
	if format == "markdown" {
		b.WriteString("\n### Telemetry per worker\n")
	}
	b.WriteString("\n")
	header := append([]string{"cell"}, workerHeader...)
	if err := table.Write(b, table.Format(format), header, rows); err != nil {
		return err
	}
	cutNote(b, total-len(rows))
	return nil
}

func severalWorkers(c testrun.CellResult) bool {
	ws := c.Telemetry.Workers
	for _, w := range ws {
		if w.Worker != ws[0].Worker {
			return true
		}
	}
	return false
}

// workerHeader names the columns of workerRows.
var workerHeader = append(append([]string{"case", "worker", "role", "node"}, workerFigures...), "catalog")

// workerRows are a cell's per-worker telemetry rows as text (case,
// worker, role, node, the figures, catalog), where it has several
// workers; the summary and the HTML page show them.
func workerRows(c testrun.CellResult) [][]string {
	if c.Telemetry == nil || !severalWorkers(c) {
		return nil
	}
	var rows [][]string
	for _, w := range c.Telemetry.Workers {
		cs := w.Case
		if cs == "" {
			cs = "(cell)"
		}
		row := []string{cs, w.Worker, w.Role, w.Node}
		for _, f := range workerFigures {
			v, ok := w.Figures[f]
			row = append(row, map[bool]string{true: num(v), false: "–"}[ok])
		}
		rows = append(rows, append(row, strings.Join(w.Catalog, " ")))
	}
	return rows
}
