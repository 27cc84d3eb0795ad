package live

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/telemetry"
)

// detailLines are the selected cell's title, log tail, GPUs and
// telemetry figures, in the lines the layout leaves them.
func (m *Model) detailLines() []string {
	dir, c, ok := m.selected()
	if !ok {
		return []string{"", "no cell"}
	}
	_, tail := m.layout()
	title := fmt.Sprintf("── cell %s (%s)", c.Name, c.ID)
	if c.Task != "" {
		title += " · job " + c.Task
	}
	title += " · " + c.State
	if c.Nodes != "" {
		title += " on " + c.Nodes
	}
	d := m.detail
	if d.Log != "" {
		title += " · " + d.Log
		if len(d.Logs) > 1 {
			title += fmt.Sprintf(" (%d of %d logs; l: next)", slices.Index(d.Logs, d.Log)+1, len(d.Logs))
		}
	}
	lines := []string{"", bold.Render(title)}
	var body []string
	switch {
	case d.Dir != dir || d.Cell != c.ID:
		body = []string{dim.Render("reading...")}
	case d.LogErr != "":
		body = []string{dim.Render(d.LogErr)}
	default:
		for l := range strings.Lines(d.Tail) {
			body = append(body, strings.TrimRight(l, "\n"))
		}
	}
	if len(body) > tail {
		body = body[len(body)-tail:]
	}
	for len(body) < tail {
		body = append(body, "")
	}
	lines = append(lines, body...)
	lines = append(lines, gpuLines(m.snap.gpu(dir, c.ID))...)
	return append(lines, figuresLine(d))
}

// gpu is the GPU summary of cell id of the sweep in dir.
func (s Snapshot) gpu(dir, id string) (gpustat.Summary, bool) {
	for _, sw := range s.Sweeps {
		if sw.Dir == dir {
			g, ok := sw.GPU[id]
			return g, ok
		}
	}
	return gpustat.Summary{}, false
}

// gpuLines are one line per GPU (at most four, then how many more).
func gpuLines(s gpustat.Summary, ok bool) []string {
	if !ok {
		return []string{dim.Render("GPUs: no gpu.jsonl yet")}
	}
	var out []string
	for i, g := range s.GPUs {
		if i == 4 {
			out[len(out)-1] += fmt.Sprintf(" · and %d more GPUs", len(s.GPUs)-4)
			break
		}
		parts := []string{fmt.Sprintf("GPU %d", g.Index)}
		add := func(name string, st *gpustat.Stat, unit string) {
			if mean, _, hi, ok := st.Figures(); ok {
				parts = append(parts, fmt.Sprintf("%s %.0f%s (max %.0f)", name, mean, unit, hi))
			}
		}
		add("util", g.UtilPct, "%")
		if _, _, hi, ok := g.MemUsedMiB.Figures(); ok {
			parts = append(parts, fmt.Sprintf("mem %.0f of %.0f MiB", hi, g.MemTotalMiB))
		}
		add("power", g.PowerW, " W")
		add("SM clock", g.SMClockMHz, " MHz")
		add("temp", g.TempC, " C")
		out = append(out, strings.Join(parts, " · "))
	}
	if s.Note != "" || len(out) == 0 {
		out = append(out, dim.Render("GPUs: "+cmp.Or(s.Note, "no sample yet")))
	}
	return out
}

// figuresLine is the cell's telemetry figures as they stand.
func figuresLine(d Detail) string {
	if len(d.Figures) == 0 {
		return dim.Render("telemetry: " + cmp.Or(d.TelNote, "no figures yet"))
	}
	parts := make([]string, len(d.Figures))
	for i, f := range d.Figures {
		parts[i] = fmt.Sprintf("%s %s", f.Name, formatFigure(f))
	}
	return "telemetry: " + strings.Join(parts, " · ")
}

func formatFigure(f telemetry.Figure) string {
	v := fmt.Sprintf("%.4g", f.Value)
	if f.Unit != "" {
		v += " " + f.Unit
	}
	return v
}

// footer is the message and the keys, or the question waiting for y/n.
func (m *Model) footer() []string {
	if q := m.ask; q != nil {
		what := fmt.Sprintf("%s cell %s (%s", q.verb, q.cell.Name, q.cell.ID)
		if q.cell.Task != "" {
			what += ", job " + q.cell.Task
		}
		return []string{"", bold.Render(what + ", " + q.cell.State + ")? y/n")}
	}
	keys := "↑/↓ j/k select · PgUp/PgDn · c cancel cell · r resubmit cell · l next log · q quit (the sweep goes on)"
	return []string{m.msg, dim.Render(keys)}
}
