package live

import (
	"errors"
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/telemetry"
)

// clean is the one sanitiser of the view: it makes text from a sweep
// (its directory, its manifest, the scheduler's answers, its files and
// logs) safe to draw: no escape sequences, control characters or
// bidirectional overrides, tabs as spaces.
func clean(s string) string {
	s = ansi.Strip(s)
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			return -1
		}
		return r
	}, s)
}

// shown is the model as the screen draws it: every string in it that
// came from the sweeps passed through clean. The model itself keeps them
// as they are: the actions name the sweep and the cell by them.
func (m *Model) shown() *Model {
	s := *m
	s.snap = cleanSnapshot(m.snap)
	s.detail = cleanDetail(m.detail)
	s.msg = clean(m.msg)
	if m.ask != nil {
		s.ask = &question{verb: m.ask.verb, dir: clean(m.ask.dir), cell: cleanCell(m.ask.cell)}
	}
	return &s
}

func cleanSnapshot(snap Snapshot) Snapshot {
	out := Snapshot{At: snap.At, Sweeps: make([]Sweep, len(snap.Sweeps))}
	for i, sw := range snap.Sweeps {
		c := Sweep{Dir: clean(sw.Dir), ID: clean(sw.ID), Started: sw.Started, Cells: make([]scheduler.CellStatus, len(sw.Cells))}
		if sw.Err != nil {
			c.Err = errors.New(clean(sw.Err.Error()))
		}
		for j, cell := range sw.Cells {
			c.Cells[j] = cleanCell(cell)
		}
		if sw.GPU != nil {
			c.GPU = make(map[string]gpustat.Summary, len(sw.GPU))
			for id, g := range sw.GPU {
				c.GPU[clean(id)] = cleanGPU(g)
			}
		}
		out.Sweeps[i] = c
	}
	return out
}

func cleanCell(c scheduler.CellStatus) scheduler.CellStatus {
	c.ID, c.Name, c.Job, c.Task = clean(c.ID), clean(c.Name), clean(c.Job), clean(c.Task)
	c.TaskState = cleanState(c.TaskState)
	if c.Earlier != nil {
		earlier := make([]sweep.TaskState, len(c.Earlier))
		for i, e := range c.Earlier {
			earlier[i] = cleanState(e)
		}
		c.Earlier = earlier
	}
	return c
}

func cleanState(s sweep.TaskState) sweep.TaskState {
	s.State, s.Reason, s.Elapsed, s.Nodes, s.Source = clean(s.State), clean(s.Reason), clean(s.Elapsed), clean(s.Nodes), clean(s.Source)
	return s
}

func cleanGPU(g gpustat.Summary) gpustat.Summary {
	g.Note = clean(g.Note)
	if g.GPUs != nil {
		gpus := make([]gpustat.GPU, len(g.GPUs))
		for i, x := range g.GPUs {
			x.UUID = clean(x.UUID)
			gpus[i] = x
		}
		g.GPUs = gpus
	}
	return g
}

// cleanDetail is d cleaned, its log tail line by line.
func cleanDetail(d Detail) Detail {
	d.Dir, d.Cell, d.Log, d.LogErr, d.TelNote = clean(d.Dir), clean(d.Cell), clean(d.Log), clean(d.LogErr), clean(d.TelNote)
	logs := make([]string, len(d.Logs))
	for i, l := range d.Logs {
		logs[i] = clean(l)
	}
	d.Logs = logs
	var tail strings.Builder
	for l := range strings.Lines(d.Tail) {
		tail.WriteString(clean(strings.TrimRight(l, "\r\n")) + "\n")
	}
	d.Tail = tail.String()
	figs := make([]telemetry.Figure, len(d.Figures))
	for i, f := range d.Figures {
		f.Name, f.Unit, f.Direction = clean(f.Name), clean(f.Unit), clean(f.Direction)
		figs[i] = f
	}
	d.Figures = figs
	return d
}
