package live

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/telemetry"
)

func init() { lipgloss.SetColorProfile(termenv.Ascii) }

// fakeSource is a Source with a fixed snapshot and detail that records
// the actions asked of it.
type fakeSource struct {
	snap   Snapshot
	detail Detail
	mu     sync.Mutex
	acts   []string
}

func (f *fakeSource) Poll(context.Context) Snapshot { return f.snap }
func (f *fakeSource) Detail(dir string, c scheduler.CellStatus, log string, lines int) Detail {
	d := f.detail
	d.Dir, d.Cell = dir, c.ID
	return d
}
func (f *fakeSource) Cancel(_ context.Context, dir, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acts = append(f.acts, "cancel "+dir+" "+id)
	return "cancelled 1 task(s) of cell " + id, nil
}
func (f *fakeSource) Resubmit(_ context.Context, dir string, c scheduler.CellStatus) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acts = append(f.acts, "resubmit "+dir+" "+c.ID)
	return "", errors.New("sbatch: error: Batch job submission failed: Invalid account")
}

func stat(mean, lo, hi float64) *gpustat.Stat { return &gpustat.Stat{Mean: mean, Min: lo, Max: hi} }

func cell(id, name, task, state, elapsed, nodes string) scheduler.CellStatus {
	return scheduler.CellStatus{ID: id, Name: name, Task: task, Attempt: 1, TaskState: sweep.TaskState{State: state, Elapsed: elapsed, Nodes: nodes}}
}

// fixed is a model of two sweeps in every kind of state, times frozen,
// the second cell selected, its log tail, GPUs and figures read.
func fixed(t *testing.T, width, height int) (*Model, *fakeSource) {
	t.Helper()
	at := time.Date(2026, 12, 7, 2, 30, 0, 0, time.UTC)
	done := cell("a1b2c3", "vllm-agg-TC01-sim:ok", "4101_0", scheduler.StateCompleted, "00:01:40", "node1")
	failed := cell("d4e5f6", "vllm-agg-TC01-sim:fail", "4101_2", scheduler.StateFailed, "00:00:12", "node2")
	failed.ExitCode = 3
	pending := cell("0a0b0c", "sglang-agg-TC01-sim:ok", "4102_0", scheduler.StatePending, "", "")
	pending.Reason = "Resources\x1b[31m"
	src := &fakeSource{snap: Snapshot{At: at, Sweeps: []Sweep{
		{Dir: "sweeps/vllm", ID: "vllm-20261207", Started: at.Add(-5 * time.Minute), Cells: []scheduler.CellStatus{
			done, cell("b7c8d9", "vllm-agg-TC01-sim:slow", "4101_1", scheduler.StateRunning, "00:04:58", "node1"), failed},
			GPU: map[string]gpustat.Summary{
				"a1b2c3": {Samples: 20, GPUs: []gpustat.GPU{{Index: 0, Samples: 20, UtilPct: stat(71, 0, 99), MemUsedMiB: stat(30000, 500, 40960), MemTotalMiB: 81559}}},
				"b7c8d9": {Samples: 60, GPUs: []gpustat.GPU{
					{Index: 0, Samples: 30, UtilPct: stat(86.4, 10, 100), MemUsedMiB: stat(60000, 500, 71680), MemTotalMiB: 81559, PowerW: stat(512, 90, 690), SMClockMHz: stat(1755, 1410, 1980), TempC: stat(61, 40, 70)},
					{Index: 1, Samples: 30, UtilPct: stat(80, 10, 100), MemUsedMiB: stat(58000, 500, 70000), MemTotalMiB: 81559},
				}},
			}},
		{Dir: "sweeps/sglang", ID: "sglang-20261207", Started: at.Add(-3 * time.Minute), Cells: []scheduler.CellStatus{pending,
			{ID: "1d2e3f", Name: "sglang-agg-TC01-sim:later", Attempt: 0, TaskState: sweep.TaskState{State: scheduler.StateNotSubmitted}}}},
	}}, detail: Detail{
		Logs: []string{"cells/b7c8d9/slurm-4101_1.out", "cells/b7c8d9/services/etcd.log"},
		Log:  "cells/b7c8d9/slurm-4101_1.out",
		Tail: "kvsweep job: harness started\n\x1b[2Jcase TC-01 warm pass 1 of 3\tok\ncase TC-01 warm pass 2 of 3\n",
		Figures: []telemetry.Figure{{Name: "gpu_prefix_hit_rate", Unit: "", Value: 0.4213}, {Name: "kv_usage_peak", Unit: "%", Value: 87.5},
			{Name: "preemptions", Value: 0}},
	}}
	m := newModel(src, 5*time.Second)
	step(m, tea.WindowSizeMsg{Width: width, Height: height})
	step(m, pollMsg{snap: src.snap})
	step(m, tea.KeyMsg{Type: tea.KeyDown})
	return m, src
}

// step sends msg and runs what it returns until no message is left,
// leaving out the ticks (times are frozen).
func step(m *Model, msg tea.Msg) {
	queue := []tea.Msg{msg}
	for len(queue) > 0 {
		msg, queue = queue[0], queue[1:]
		_, cmd := m.Update(msg)
		queue = append(queue, run(cmd)...)
	}
}

// run runs cmd, and a batch's commands, to their messages, the ticks
// and quit left out: however long a command takes, its message is
// handled (the model's ticks, from newModel, come at once).
func run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, run(c)...)
		}
		return out
	case tickMsg, followMsg, tea.QuitMsg:
		return nil
	default:
		return []tea.Msg{msg}
	}
}

// newModel is NewModel whose ticks come at once, for step to leave out.
func newModel(src Source, interval time.Duration) *Model {
	m := NewModel(src, interval)
	m.tick = func(_ time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return fn(time.Time{}) }
	}
	return m
}

// The view from a fixed model: the counts over both sweeps, elapsed
// and remaining time, each sweep's cells with their GPU use, the
// selected cell's log tail with its escape sequences removed, its GPUs
// and figures, the keys.
func TestViewGolden(t *testing.T) {
	m, _ := fixed(t, 160, 34)
	golden.Check(t, "testdata/view.golden", []byte(m.View()+"\n"))
}

// On a narrow terminal every line is cut at the width.
func TestViewNarrowGolden(t *testing.T) {
	m, _ := fixed(t, 72, 24)
	v := m.View()
	for i, l := range strings.Split(v, "\n") {
		if w := lipgloss.Width(l); w > 72 {
			t.Errorf("line %d is %d wide, over 72: %q", i+1, w, l)
		}
	}
	golden.Check(t, "testdata/view-narrow.golden", []byte(v+"\n"))
}

// c on a running cell asks first; n leaves it; y cancels that one cell
// and says so.
func TestCancelAsks(t *testing.T) {
	m, src := fixed(t, 160, 34)
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("c")})
	v := m.View()
	if !strings.Contains(v, "cancel cell vllm-agg-TC01-sim:slow (b7c8d9, job 4101_1, RUNNING)? y/n") {
		t.Fatalf("no question after c:\n%s", v)
	}
	golden.Check(t, "testdata/view-ask.golden", []byte(v+"\n"))
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("n")})
	if len(src.acts) != 0 || !strings.Contains(m.View(), "cancel of cell vllm-agg-TC01-sim:slow: not done") {
		t.Fatalf("n acted (%v) or said nothing:\n%s", src.acts, m.View())
	}
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("c")})
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	if len(src.acts) != 1 || src.acts[0] != "cancel sweeps/vllm b7c8d9" {
		t.Fatalf("actions %v, want one cancel of b7c8d9", src.acts)
	}
	if v := m.View(); !strings.Contains(v, "cancelled 1 task(s) of cell b7c8d9") {
		t.Errorf("the cancel is not said:\n%s", v)
	}
}

// c on an ended cell and r on a running one ask nothing and say why; r on
// a failed cell asks, and a refused submission is said.
func TestActionsRefusedAndFailed(t *testing.T) {
	m, src := fixed(t, 160, 34)
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("r")})
	if !strings.Contains(m.View(), "cell vllm-agg-TC01-sim:slow is RUNNING: only a cell that ended without success, or never ran, is submitted again") {
		t.Errorf("r on a running cell:\n%s", m.View())
	}
	step(m, tea.KeyMsg{Type: tea.KeyUp})
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("c")})
	if !strings.Contains(m.View(), "cell vllm-agg-TC01-sim:ok is COMPLETED: nothing to cancel") {
		t.Errorf("c on a completed cell:\n%s", m.View())
	}
	step(m, tea.KeyMsg{Type: tea.KeyEnd})
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("r")})
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	if len(src.acts) != 1 || src.acts[0] != "resubmit sweeps/sglang 1d2e3f" {
		t.Fatalf("actions %v, want one resubmit of the never-submitted 1d2e3f", src.acts)
	}
	if v := m.View(); !strings.Contains(v, "resubmit of cell sglang-agg-TC01-sim:later failed: sbatch: error: Batch job submission failed: Invalid account") {
		t.Errorf("the refusal is not said:\n%s", v)
	}
}

// q quits without acting.
func TestQuitTouchesNothing(t *testing.T) {
	m, src := fixed(t, 160, 34)
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok || len(src.acts) != 0 {
		t.Errorf("q: quit %v, actions %v", ok, src.acts)
	}
}

// The remaining time is the pace so far: 5 minutes for 2 ended cells of
// 5, so 7.5 more; none ended, no estimate.
func TestElapsed(t *testing.T) {
	m, _ := fixed(t, 160, 34)
	el, left, ok := m.snap.Elapsed()
	if el != 5*time.Minute || left != 450*time.Second || !ok {
		t.Errorf("Elapsed = %s, %s, %v; want 5m0s, 7m30s, true", el, left, ok)
	}
	s := Snapshot{At: m.snap.At, Sweeps: []Sweep{{Started: m.snap.At.Add(-time.Minute), Cells: []scheduler.CellStatus{cell("x", "x", "1_0", scheduler.StateRunning, "", "")}}}}
	if _, _, ok := s.Elapsed(); ok {
		t.Error("an estimate with no cell ended")
	}
}

// Keys read together (typed fast, or sent by tmux send-keys j c) each
// do what they do alone.
func TestKeysReadTogether(t *testing.T) {
	m, src := fixed(t, 160, 34)
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jc")})
	if v := m.View(); !strings.Contains(v, "cell vllm-agg-TC01-sim:fail is FAILED: nothing to cancel") {
		t.Errorf("j c read together:\n%s", v)
	}
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("kcy")})
	if len(src.acts) != 1 || src.acts[0] != "cancel sweeps/vllm b7c8d9" {
		t.Errorf("k c y read together: actions %v", src.acts)
	}
}

// A sweep longer than the screen scrolls to keep the selected row in
// view, under the column heading, within the height.
func TestViewScrolls(t *testing.T) {
	var cells []scheduler.CellStatus
	for i := range 100 {
		cells = append(cells, cell(fmt.Sprintf("c%03d", i), fmt.Sprintf("cell-%03d", i), fmt.Sprintf("7_%d", i), scheduler.StateRunning, "00:00:01", "n1"))
	}
	src := &fakeSource{snap: Snapshot{At: time.Unix(0, 0), Sweeps: []Sweep{{Dir: "big", Cells: cells}}}}
	m := newModel(src, time.Second)
	step(m, tea.WindowSizeMsg{Width: 100, Height: 30})
	step(m, pollMsg{snap: src.snap})
	for range 70 {
		step(m, tea.KeyMsg{Type: tea.KeyDown})
	}
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) > 30 || !strings.Contains(v, "> c070 cell-070") || !strings.HasPrefix(lines[2], "  id") {
		t.Errorf("%d lines, the selected row or the heading missing:\n%s", len(lines), v)
	}
	step(m, tea.KeyMsg{Type: tea.KeyHome})
	if v := m.View(); !strings.Contains(v, "> c000 cell-000") || !strings.Contains(v, "big · 100 cells: 100 RUNNING") {
		t.Errorf("Home:\n%s", v)
	}
}

// slowSource is a fakeSource whose reads and actions take a while, as
// on a loaded machine or a slow cluster.
type slowSource struct{ *fakeSource }

func (s slowSource) Detail(dir string, c scheduler.CellStatus, log string, lines int) Detail {
	time.Sleep(200 * time.Millisecond)
	return s.fakeSource.Detail(dir, c, log, lines)
}

func (s slowSource) Cancel(ctx context.Context, dir, id string) (string, error) {
	time.Sleep(200 * time.Millisecond)
	return s.fakeSource.Cancel(ctx, dir, id)
}

// A read and an action that take their time are waited for: the log
// tail and what the cancel did are shown however slow they were.
func TestSlowSourceIsWaitedFor(t *testing.T) {
	_, fake := fixed(t, 160, 34)
	m := newModel(slowSource{fake}, 5*time.Second)
	step(m, tea.WindowSizeMsg{Width: 160, Height: 34})
	step(m, pollMsg{snap: fake.snap})
	step(m, tea.KeyMsg{Type: tea.KeyDown})
	if v := m.View(); !strings.Contains(v, "case TC-01 warm pass 2 of 3") {
		t.Errorf("the slow read of the log tail is not shown:\n%s", v)
	}
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("cy")})
	if v := m.View(); len(fake.acts) != 1 || !strings.Contains(v, "cancelled 1 task(s) of cell b7c8d9") {
		t.Errorf("actions %v; the slow cancel is not said:\n%s", fake.acts, v)
	}
}
