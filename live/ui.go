package live

import (
	"context"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kvsweep/kvsweep/scheduler"
)

// Source is what the view reads and does: the sweeps' polls, a cell's
// detail, and the two actions. The real one works through the lane
// (source.go); the tests give their own.
type Source interface {
	Poll(ctx context.Context) Snapshot
	Detail(dir string, cell scheduler.CellStatus, log string, lines int) Detail
	// Cancel and Resubmit act on one cell and say what they did.
	Cancel(ctx context.Context, dir, cellID string) (string, error)
	Resubmit(ctx context.Context, dir string, cell scheduler.CellStatus) (string, error)
}

// Model is the view's state: the last poll, the selection, the detail of
// the selected cell, a question waiting for y/n and the last message.
type Model struct {
	src      Source
	interval time.Duration // between polls
	follow   time.Duration // between reads of the selected cell's log
	snap     Snapshot
	polled   bool
	sel      int // index into snap.rows()
	detail   Detail
	log      string // the log file chosen with l ("" the first)
	width    int
	height   int
	ask      *question
	msg      string
	busy     bool // an action runs
	// tick is tea.Tick: the command that sends fn's message after d
	// (the tests send it at once).
	tick func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd
}

// question is an action the user asked for, waiting for y/n.
type question struct {
	verb string // "cancel" or "resubmit"
	dir  string
	cell scheduler.CellStatus
}

// NewModel is the view over src, polling every interval.
func NewModel(src Source, interval time.Duration) *Model {
	return &Model{src: src, interval: interval, follow: min(time.Second, interval), width: 120, height: 40, tick: tea.Tick}
}

// Messages of the view's loop.
type (
	// pollMsg is a poll's answer; again says it is the one an interval
	// that schedules the next (the others answer an action).
	pollMsg struct {
		snap  Snapshot
		again bool
	}
	tickMsg   struct{}
	followMsg struct{}
	actionMsg struct{ text string }
	// detailMsg is a read of the selected cell; follow says it is the
	// one read a second that follows the log (the others answer a move).
	detailMsg struct {
		d      Detail
		follow bool
	}
)

// Init starts the first poll and the reads that follow the log.
func (m *Model) Init() tea.Cmd { return tea.Batch(m.pollCmd(true), m.followTick()) }

func (m *Model) followTick() tea.Cmd {
	return m.tick(m.follow, func(time.Time) tea.Msg { return followMsg{} })
}

func (m *Model) pollCmd(again bool) tea.Cmd {
	src := m.src
	return func() tea.Msg { return pollMsg{src.Poll(context.Background()), again} }
}

// detailCmd reads the selected cell's detail (follow: as the read a
// second that follows the log).
func (m *Model) detailCmd(follow bool) tea.Cmd {
	dir, cell, ok := m.selected()
	if !ok {
		if follow {
			return m.followTick()
		}
		return nil
	}
	src, log, lines := m.src, m.log, m.tailLines()
	return func() tea.Msg { return detailMsg{src.Detail(dir, cell, log, lines), follow} }
}

// selected is the selected cell and its sweep's directory.
func (m *Model) selected() (string, scheduler.CellStatus, bool) {
	rows := m.snap.rows()
	if len(rows) == 0 {
		return "", scheduler.CellStatus{}, false
	}
	r := rows[min(m.sel, len(rows)-1)]
	sw := m.snap.Sweeps[r.sweep]
	return sw.Dir, sw.Cells[r.cell], true
}

// Update handles a key, a poll's answer, a tick or an action's outcome.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, m.detailCmd(false)
	case tea.KeyMsg:
		if msg.Type != tea.KeyRunes || msg.Paste || len(msg.Runes) < 2 {
			return m, m.key(msg.String())
		}
		// Keys typed faster than they were read come as one message.
		var cmds []tea.Cmd
		for _, r := range msg.Runes {
			cmds = append(cmds, m.key(string(r)))
		}
		return m, tea.Batch(cmds...)
	case pollMsg:
		m.snap, m.polled = msg.snap, true
		m.sel = min(m.sel, max(0, len(m.snap.rows())-1))
		if !msg.again {
			return m, m.detailCmd(false)
		}
		return m, tea.Batch(m.detailCmd(false), m.tick(m.interval, func(time.Time) tea.Msg { return tickMsg{} }))
	case detailMsg:
		if dir, cell, ok := m.selected(); ok && msg.d.Dir == dir && msg.d.Cell == cell.ID {
			m.detail = msg.d
		}
		if msg.follow {
			return m, m.followTick()
		}
		return m, nil
	case followMsg:
		return m, m.detailCmd(true)
	case tickMsg:
		return m, m.pollCmd(true)
	case actionMsg:
		m.msg, m.busy = msg.text, false
		return m, m.pollCmd(false)
	}
	return m, nil
}

// key is what a key does: move, ask, answer, quit.
func (m *Model) key(k string) tea.Cmd {
	if m.ask != nil {
		return m.answer(k)
	}
	n := len(m.snap.rows())
	switch k {
	case "q", "ctrl+c", "esc":
		return tea.Quit
	case "down", "j":
		return m.move(min(m.sel+1, max(0, n-1)))
	case "up", "k":
		return m.move(max(m.sel-1, 0))
	case "pgdown", "f":
		return m.move(min(m.sel+m.tableLines(), max(0, n-1)))
	case "pgup", "b":
		return m.move(max(m.sel-m.tableLines(), 0))
	case "home", "g":
		return m.move(0)
	case "end", "G":
		return m.move(max(0, n-1))
	case "l":
		m.log = nextLog(m.detail.Logs, m.detail.Log)
		return m.detailCmd(false)
	case "c", "r":
		m.askFor(map[string]string{"c": "cancel", "r": "resubmit"}[k])
	}
	return nil
}

// move selects row i and reads its detail.
func (m *Model) move(i int) tea.Cmd {
	if i == m.sel {
		return nil
	}
	m.sel, m.log, m.detail = i, "", Detail{}
	return m.detailCmd(false)
}

// nextLog is the log after cur in logs (the first after the last).
func nextLog(logs []string, cur string) string {
	for i, l := range logs {
		if l == cur && i+1 < len(logs) {
			return logs[i+1]
		}
	}
	if len(logs) > 0 {
		return logs[0]
	}
	return ""
}

// askFor asks whether to cancel or resubmit the selected cell, when the
// cell is one that can be: live to cancel, ended without success or
// never submitted to resubmit.
func (m *Model) askFor(verb string) {
	dir, cell, ok := m.selected()
	switch {
	case !ok:
		return
	case m.busy:
		m.msg = "an action is still running"
	case verb == "cancel" && (cell.Task == "" || scheduler.Terminal(cell.State)):
		m.msg = fmt.Sprintf("cell %s is %s: nothing to cancel", cell.Name, cell.State)
	case verb == "resubmit" && len(scheduler.Select(dir, []scheduler.CellStatus{cell}, scheduler.Selection{Failed: true, Missing: true})) == 0:
		m.msg = fmt.Sprintf("cell %s is %s: only a cell that ended without success, or never ran, is submitted again", cell.Name, cell.State)
	default:
		m.ask, m.msg = &question{verb: verb, dir: dir, cell: cell}, ""
	}
}

// answer is y (act), or anything else (do nothing).
func (m *Model) answer(k string) tea.Cmd {
	q := m.ask
	m.ask = nil
	if k != "y" && k != "Y" {
		m.msg = q.verb + " of cell " + q.cell.Name + ": not done"
		return nil
	}
	m.busy, m.msg = true, q.verb+" of cell "+q.cell.Name+"..."
	src := m.src
	return func() tea.Msg {
		ctx := context.Background()
		var text string
		var err error
		if q.verb == "cancel" {
			text, err = src.Cancel(ctx, q.dir, q.cell.ID)
		} else {
			text, err = src.Resubmit(ctx, q.dir, q.cell)
		}
		if err != nil {
			return actionMsg{fmt.Sprintf("%s of cell %s failed: %v", q.verb, q.cell.Name, err)}
		}
		return actionMsg{text}
	}
}
