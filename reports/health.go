package reports

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/testrun"
)

// writeHealth writes what rose on each cell's GPUs during its last
// attempt (markdown, table): a row a GPU and counter, before → after,
// FAULT where the rise means the hardware failed (the cell is then an
// infra failure); then the earlier attempts whose GPUs failed, and the
// cells' notes, each once with the cells it is on. Nothing when no
// counter rose and nothing is noted.
func writeHealth(b *bytes.Buffer, format Format, r *testrun.Run) error {
	var rows [][]string
	var lines, notes []string
	noted := map[string][]string{} // a note: the cells it is on
	total := 0
	fit := fitter{format: format, limit: StepSummaryLimit / 8}
	for _, c := range r.Cells {
		for _, a := range c.Earlier {
			if a.GPUFault != nil {
				lines = append(lines, fmt.Sprintf("%s: an earlier attempt's GPUs failed under it %s", c.Name, a.GPUFault.Evidence()))
			}
		}
		if c.Health == nil {
			continue
		}
		if n := c.Health.Note; n != "" {
			if len(noted[n]) == 0 {
				notes = append(notes, n)
			}
			noted[n] = append(noted[n], c.Name)
		}
		for _, ch := range c.Health.Changes {
			total++
			gpu, fault := fmt.Sprint(ch.GPU), ""
			if ch.GPU < 0 {
				gpu = "node"
			}
			if ch.Fault {
				fault = "FAULT"
			}
			row := []string{c.Name, c.Health.Node, gpu, ch.Counter, fmt.Sprintf("%d → %d", ch.Before, ch.After), fault}
			if fit.fits(row) {
				rows = append(rows, row)
			}
		}
	}
	for _, n := range notes {
		lines = append(lines, noteLine(n, noted[n]))
	}
	if total == 0 && len(lines) == 0 {
		return nil
	}
	if format == "markdown" {
		b.WriteString("\n### GPU health\n\n")
	} else {
		b.WriteString("\nGPU health\n\n")
	}
	if total > 0 {
		if err := table.Write(b, table.Format(format), []string{"cell", "node", "gpu", "counter", "before → after", "fault"}, rows); err != nil {
			return err
		}
		cutNote(b, total-len(rows))
		b.WriteString("\n")
	}
	for i, l := range lines {
		if i == maxEvidenceCells {
			fmt.Fprintf(b, "- and %d more (kvsweep report --format json has them)\n", len(lines)-i)
			break
		}
		fmt.Fprintf(b, "- %s\n", l)
	}
	return nil
}

// noteLine is a note and the cells it is on, once for all of them:
// "kernel log not readable: Xids unknown (a, b and 3 more)".
func noteLine(note string, cells []string) string {
	if len(cells) == 1 {
		return cells[0] + ": " + note
	}
	shown := cells[:min(len(cells), 3)]
	s := note + " (" + strings.Join(shown, ", ")
	if more := len(cells) - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s + ")"
}

// healthLines is a cell's GPU health for the HTML page: each rise, and
// each earlier attempt whose GPUs failed.
func healthLines(c testrun.CellResult) []string {
	var out []string
	for _, a := range c.Earlier {
		if a.GPUFault != nil {
			out = append(out, "an earlier attempt's GPUs failed under it "+a.GPUFault.Evidence())
		}
	}
	if c.Health == nil {
		return out
	}
	for _, ch := range c.Health.Changes {
		s := ch.String()
		if ch.Fault {
			s += " — FAULT"
		}
		out = append(out, s)
	}
	if c.Health.Note != "" {
		out = append(out, c.Health.Note)
	}
	return out
}
