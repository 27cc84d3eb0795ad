package live

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/telemetry"
)

// maxTail bounds what is read from the end of a log for its tail.
const maxTail = 256 << 10

// laneSource is the Source over the sweeps in dirs, opened with the
// lane's scheduler configuration: its polls are scheduler.Status (which
// only reads), shared through the poll cache where the scheduler shares
// polls; cancel is scheduler.Cancel, as kvsweep cancel --cells does;
// resubmit is the lane's SubmitDir of the one cell, as kvsweep resubmit
// does.
type laneSource struct {
	lane     *lane.Lane // its Stdout and Stderr are out
	out      *lastLine
	dirs     []string
	interval time.Duration

	// mu is held for a poll and an action: each uses the sweep's one
	// scheduler object, which is not safe for concurrent use.
	mu     sync.Mutex
	scheds map[string]scheduler.Scheduler
	last   map[string]Sweep
	ended  map[string]gpustat.Summary // GPU summaries of ended cells, by dir, id and attempt

	telMu sync.Mutex
	tel   map[string]derived // the selected cell's figures, by dir and id
}

// derived is a cell's telemetry figures and when they were derived: at
// most once an interval, however often its log is read.
type derived struct {
	at   time.Time
	figs []telemetry.Figure
	note string
}

func newLaneSource(l *lane.Lane, dirs []string, interval time.Duration) *laneSource {
	out := &lastLine{}
	lc := *l
	lc.Stdout, lc.Stderr, lc.Progress = out, out, nil
	return &laneSource{lane: &lc, out: out, dirs: dirs, interval: interval,
		scheds: map[string]scheduler.Scheduler{}, last: map[string]Sweep{}, ended: map[string]gpustat.Summary{}, tel: map[string]derived{}}
}

// sched is the sweep's scheduler, opened once and told to share its
// polls at the view's interval.
func (s *laneSource) sched(dir string) (scheduler.Scheduler, error) {
	if sc, ok := s.scheds[dir]; ok {
		return sc, nil
	}
	_, sc, err := s.lane.Open(dir)
	if err != nil {
		return nil, err
	}
	if sh, ok := sc.(scheduler.PollSharer); ok {
		sh.SharePolls(s.interval)
	}
	s.scheds[dir] = sc
	return sc, nil
}

// Poll polls every sweep; one that fails keeps its last cells, with why.
func (s *laneSource) Poll(ctx context.Context) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{At: time.Now()}
	for _, dir := range s.dirs {
		sw := s.last[dir]
		sw.Dir, sw.Err = dir, nil
		if err := s.pollOne(ctx, &sw); err != nil {
			sw.Err = err
		}
		s.last[dir] = sw
		snap.Sweeps = append(snap.Sweeps, sw)
	}
	return snap
}

func (s *laneSource) pollOne(ctx context.Context, sw *Sweep) error {
	sc, err := s.sched(sw.Dir)
	if err != nil {
		return err
	}
	if m, err := sweep.ReadManifest(sw.Dir); err == nil {
		sw.ID = m.SweepID
	}
	cells, _, err := scheduler.Status(ctx, sw.Dir, sc)
	if err != nil {
		return err
	}
	sw.Cells = cells
	if recs, err := sweep.ReadJournal(sw.Dir); err == nil {
		for _, r := range recs {
			if r.Type == sweep.RecSubmitted && (sw.Started.IsZero() || r.Time.Before(sw.Started)) {
				sw.Started = r.Time
			}
		}
	}
	sw.GPU = map[string]gpustat.Summary{}
	for _, c := range cells {
		if g, ok := s.gpu(sw.Dir, c); ok {
			sw.GPU[c.ID] = g
		}
	}
	return nil
}

// gpu is the cell's gpu.jsonl summarised: read again each poll while the
// cell runs, once after it ended.
func (s *laneSource) gpu(dir string, c scheduler.CellStatus) (gpustat.Summary, bool) {
	if c.State == scheduler.StateNotSubmitted || c.State == scheduler.StatePending {
		return gpustat.Summary{}, false
	}
	key := fmt.Sprintf("%s\x00%s\x00%d", dir, c.ID, c.Attempt)
	if g, ok := s.ended[key]; ok {
		return g, true
	}
	b, err := sweep.ReadFile(dir, sweep.CellsDir+"/"+c.ID+"/"+sweep.GPUSamplesFile, gpustat.MaxFile)
	if err != nil {
		return gpustat.Summary{}, false
	}
	g := gpustat.Summarize(b)
	if scheduler.Terminal(c.State) {
		s.ended[key] = g
	}
	return g, true
}

// Detail reads the cell's log tail (log, or its first log) and its
// telemetry figures so far.
func (s *laneSource) Detail(dir string, c scheduler.CellStatus, log string, lines int) Detail {
	d := Detail{Dir: dir, Cell: c.ID, Logs: sweep.LogFiles(dir, c.ID)}
	switch {
	case len(d.Logs) == 0:
		d.LogErr = "no log yet"
	default:
		d.Log = d.Logs[0]
		for _, l := range d.Logs {
			if l == log {
				d.Log = l
			}
		}
		tail, _, err := sweep.Tail(dir, d.Log, lines, maxTail)
		if err != nil {
			d.LogErr = err.Error()
		}
		d.Tail = tail
	}
	tel := s.telemetry(dir, c.ID)
	d.Figures, d.TelNote = tel.figs, tel.note
	return d
}

// telemetry is the cell's figures from its telemetry.jsonl so far,
// derived again once the interval has passed.
func (s *laneSource) telemetry(dir, id string) derived {
	key := dir + "\x00" + id
	s.telMu.Lock()
	defer s.telMu.Unlock()
	if t, ok := s.tel[key]; ok && time.Since(t.at) < s.interval {
		return t
	}
	t := derived{at: time.Now()}
	b, err := sweep.ReadFile(dir, sweep.CellsDir+"/"+id+"/"+sweep.TelemetryFile, telemetry.MaxFile)
	if err != nil {
		t.note = "no " + sweep.TelemetryFile + " yet"
	} else {
		var sum telemetry.Summary
		t.figs, sum = telemetry.Derive(b)
		t.note = sum.Note
	}
	s.tel[key] = t
	return t
}

// Cancel cancels the cell's task (scheduler.Cancel, as kvsweep cancel
// --cells does), then removes what killed docker tasks of ended cells
// left, as cancel does. It holds the source's lock throughout: the
// sweep's scheduler is the one the polls use, and a scheduler is used by
// one caller at a time (Slurm's keeps what it saw of other jobs).
func (s *laneSource) Cancel(ctx context.Context, dir, cellID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, err := s.sched(dir)
	if err != nil {
		return "", err
	}
	n, err := scheduler.Cancel(ctx, dir, sc, []string{cellID})
	if err != nil {
		return "", err
	}
	if cells, _, err := scheduler.Status(ctx, dir, sc); err == nil {
		lane.RemoveLeftovers(s.out, dir, lane.EndedIn(cells))
	}
	return fmt.Sprintf("cancelled %d task(s) of cell %s", n, cellID), nil
}

// Resubmit submits the one cell again (the lane's SubmitDir, as kvsweep
// resubmit does) and says what the submission said.
func (s *laneSource) Resubmit(ctx context.Context, dir string, c scheduler.CellStatus) (string, error) {
	s.out.Write([]byte("submitted cell " + c.ID + " again\n"))
	if err := s.lane.SubmitDir(ctx, dir, map[string]bool{c.ID: true}); err != nil {
		return "", err
	}
	return s.out.String(), nil
}

// lastLine keeps the last line written to it: what the lane said of an
// action, shown as the view's message (the screen is the view's).
type lastLine struct {
	mu   sync.Mutex
	line string
}

func (w *lastLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for l := range strings.Lines(string(bytes.TrimSpace(p))) {
		if l = strings.TrimSpace(l); l != "" {
			w.line = l
		}
	}
	return len(p), nil
}

func (w *lastLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.line
}
