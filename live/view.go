package live

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/scheduler"
)

// Styles of the view; on a terminal without colours (and in the tests)
// lipgloss renders them as plain text.
var (
	bold     = lipgloss.NewStyle().Bold(true)
	dim      = lipgloss.NewStyle().Faint(true)
	selected = lipgloss.NewStyle().Reverse(true)
	stateFg  = map[string]lipgloss.Color{scheduler.StateCompleted: "2", scheduler.StateRunning: "6", scheduler.StatePending: "3",
		scheduler.StateFailed: "1", scheduler.StateTimeout: "1", scheduler.StateOOM: "1", scheduler.StateNodeFail: "1", scheduler.StateLost: "1",
		scheduler.StateCancelled: "5"}
)

// View draws the view: the header with counts and times, the table of
// cells, the selected cell's detail, and the keys (or the question),
// from the model as shown (every string from the sweeps cleaned).
func (m *Model) View() string {
	if !m.polled {
		return "kvsweep watch: polling...\n"
	}
	s := m.shown()
	var lines []string
	lines = append(lines, s.header()...)
	lines = append(lines, s.table()...)
	lines = append(lines, s.detailLines()...)
	lines = append(lines, s.footer()...)
	for i, l := range lines {
		lines[i] = strings.TrimRight(ansi.Truncate(l, m.width, ""), " ")
	}
	return strings.Join(lines, "\n")
}

// header is the counts of every cell by state, then elapsed and
// remaining time and when the last poll was.
func (m *Model) header() []string {
	cells := m.snap.cellsOf()
	h := fmt.Sprintf("kvsweep watch · %d sweep%s · %d cells: %s", len(m.snap.Sweeps), plural(len(m.snap.Sweeps)), len(cells), cmp.Or(scheduler.CountsLine(cells), "none"))
	var t []string
	if el, left, ok := m.snap.Elapsed(); el > 0 {
		t = append(t, "elapsed "+scheduler.FormatElapsed(el))
		switch {
		case ok && left == 0:
			t = append(t, "every cell ended")
		case ok:
			t = append(t, "remaining ~"+scheduler.FormatElapsed(left)+" at the pace so far")
		default:
			t = append(t, "remaining: no cell ended yet")
		}
	}
	t = append(t, fmt.Sprintf("polled %s, every %s", m.snap.At.Format("15:04:05"), m.interval))
	return []string{bold.Render(h), dim.Render(strings.Join(t, " · "))}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// layout is the lines of the table (headings included) and of the log
// tail, from the height.
func (m *Model) layout() (table, tail int) {
	avail := max(m.height-4, 12)
	need := len(m.snap.rows()) + 2*len(m.snap.Sweeps) + 1
	table = min(need, max(avail/2, 4))
	return table, max(avail-table-4, 2)
}

func (m *Model) tableLines() int { t, _ := m.layout(); return max(t-3, 1) }
func (m *Model) tailLines() int  { _, t := m.layout(); return t }

// table is the cells of every sweep under a heading each, scrolled so
// the selected row shows.
func (m *Model) table() []string {
	w := m.widths()
	var lines []string
	at, i := 0, 0
	lines = append(lines, dim.Render(m.cols(w, " ", "id", "name", "job", "state", "exit", "elapsed", "nodes", "gpu", "reason")))
	for _, sw := range m.snap.Sweeps {
		head := sw.Dir
		if sw.ID != "" {
			head += " (" + sw.ID + ")"
		}
		head += fmt.Sprintf(" · %d cells: %s", len(sw.Cells), scheduler.CountsLine(sw.Cells))
		lines = append(lines, bold.Render(head))
		if sw.Err != nil {
			lines = append(lines, "  "+stateStyle(scheduler.StateFailed).Render("poll failed: "+sw.Err.Error()))
		}
		for _, c := range sw.Cells {
			mark := " "
			if i == m.sel {
				mark, at = ">", len(lines)
			}
			line := m.cols(w, mark, c.ID, c.Name, c.Task, c.State, exitOf(c), c.Elapsed, c.Nodes, gpuCell(sw.GPU, c.ID), c.Reason)
			if i == m.sel {
				line = selected.Render(line)
			} else {
				line = strings.Replace(line, c.State, stateStyle(c.State).Render(c.State), 1)
			}
			lines = append(lines, line)
			i++
		}
	}
	n, _ := m.layout()
	return window(lines, at, n)
}

// window is n lines of lines (the first, a column heading, kept) that
// hold line at.
func window(lines []string, at, n int) []string {
	if len(lines) <= n || n < 2 {
		return lines
	}
	body := lines[1:]
	start := max(0, min(at-1-(n-1)/2, len(body)-(n-1)))
	return append([]string{lines[0]}, body[start:start+n-1]...)
}

// widths are the widths of the columns id, name, job, state, exit,
// elapsed, nodes, gpu.
func (m *Model) widths() []int {
	w := []int{2, 4, 3, 5, 4, 7, 5, 3}
	for _, sw := range m.snap.Sweeps {
		for _, c := range sw.Cells {
			for i, v := range []string{c.ID, c.Name, c.Task, c.State, exitOf(c), c.Elapsed, c.Nodes, gpuCell(sw.GPU, c.ID)} {
				w[i] = max(w[i], min(ansi.StringWidth(v), 40))
			}
		}
	}
	return w
}

// cols lays out one row: a mark, then the columns padded to w, then the
// last column as it is.
func (m *Model) cols(w []int, mark string, vals ...string) string {
	var b strings.Builder
	b.WriteString(mark)
	for i, v := range vals {
		b.WriteString(" ")
		if i < len(w) {
			v = ansi.Truncate(v, w[i], "…")
			b.WriteString(v + strings.Repeat(" ", w[i]-ansi.StringWidth(v)))
		} else {
			b.WriteString(v)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

func stateStyle(s string) lipgloss.Style {
	if c, ok := stateFg[s]; ok {
		return lipgloss.NewStyle().Foreground(c)
	}
	return lipgloss.NewStyle()
}

// exitOf is the exit column as kvsweep status prints it.
func exitOf(c scheduler.CellStatus) string {
	if scheduler.Terminal(c.State) && c.State != scheduler.StateLost && !(c.State == scheduler.StateCancelled && c.ExitCode == 0 && c.Signal == 0) {
		return strconv.Itoa(c.ExitCode) + ":" + strconv.Itoa(c.Signal)
	}
	return ""
}

// gpuCell is a cell's GPU use in its row: the mean utilisation over its
// GPUs and the most memory they held together.
func gpuCell(gpus map[string]gpustat.Summary, id string) string {
	s, ok := gpus[id]
	if !ok || len(s.GPUs) == 0 {
		return ""
	}
	util, n, mem := 0.0, 0, 0.0
	for _, g := range s.GPUs {
		if mean, _, _, ok := g.UtilPct.Figures(); ok {
			util, n = util+mean, n+1
		}
		if _, _, hi, ok := g.MemUsedMiB.Figures(); ok {
			mem += hi
		}
	}
	out := fmt.Sprintf("%d GPU", len(s.GPUs))
	if n > 0 {
		out += fmt.Sprintf(" %.0f%%", util/float64(n))
	}
	if mem > 0 {
		out += fmt.Sprintf(" %.1f GiB", mem/1024)
	}
	return out
}
