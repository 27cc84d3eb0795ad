package reports

import (
	"bytes"
	"fmt"

	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/testrun"
)

// writeGPU writes what each cell's GPUs did (markdown, table): a row a
// GPU with its power, utilisation, memory, SM clock and temperature,
// then the cells' notes. Nothing when no cell sampled its GPUs.
func writeGPU(b *bytes.Buffer, format Format, r *testrun.Run) error {
	var rows [][]string
	var notes []string
	total := 0
	fit := fitter{format: format, limit: StepSummaryLimit / 8}
	for _, c := range r.Cells {
		if c.GPU == nil {
			continue
		}
		if c.GPU.Note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", c.Name, c.GPU.Note))
		}
		for _, g := range c.GPU.GPUs {
			total++
			used := show(g.MemUsedMiB, "max")
			if g.MemTotalMiB > 0 && used != "-" {
				used += fmt.Sprintf(" / %.0f", g.MemTotalMiB)
			}
			row := []string{c.Name, fmt.Sprint(g.Index), fmt.Sprint(g.Samples), show(g.PowerW, "mean", "max"), show(g.UtilPct, "mean"),
				show(g.MemUtilPct, "mean"), used, show(g.SMClockMHz, "mean", "min"), show(g.TempC, "max")}
			if fit.fits(row) {
				rows = append(rows, row)
			}
		}
	}
	if total == 0 && len(notes) == 0 {
		return nil
	}
	if format == "markdown" {
		b.WriteString("\n### GPUs\n")
	} else {
		b.WriteString("\nGPUs\n")
	}
	b.WriteString("\n")
	header := []string{"cell", "gpu", "samples", "power W mean/peak", "util % mean", "mem util % mean", "mem used MiB peak/total", "SM MHz mean/min", "temp C peak"}
	if err := table.Write(b, table.Format(format), header, rows); err != nil {
		return err
	}
	cutNote(b, total-len(rows))
	for i, n := range notes {
		if i == maxEvidenceCells {
			fmt.Fprintf(b, "- and %d more cells' notes (kvsweep report --format json has them)\n", len(notes)-i)
			break
		}
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "- %s\n", n)
	}
	return nil
}

// figures is a GPU field's summary (gpustat.Stat; nil: not reported).
type figures interface {
	Figures() (mean, lo, hi float64, ok bool)
}

// show formats the figures picked ("mean", "min", "max") of s, joined
// by " / "; "-" where the GPU did not report the field.
func show(s figures, pick ...string) string {
	mean, lo, hi, ok := s.Figures()
	if !ok {
		return "-"
	}
	out := ""
	for i, p := range pick {
		if i > 0 {
			out += " / "
		}
		out += fmt.Sprintf("%.0f", map[string]float64{"mean": mean, "min": lo, "max": hi}[p])
	}
	return out
}
