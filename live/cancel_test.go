package live

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/rendertest"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
	"github.com/kvsweep/kvsweep/sweep"
)

// guarded is the local executor's scheduler that counts the calls made
// on it while another call on it was still running. While hold is set,
// the next Poll waits inside until release closes.
type guarded struct {
	scheduler.Scheduler
	inflight atomic.Int32
	overlaps atomic.Int32
	overlap  chan struct{} // closed at the first overlap

	mu      sync.Mutex
	hold    bool
	entered chan struct{}
	release chan struct{}
}

var (
	guardedMu sync.Mutex
	guards    []*guarded
)

func init() {
	scheduler.Register("guarded", func(dir string, m *sweep.Manifest, cfg scheduler.Config) (scheduler.Scheduler, error) {
		cfg.Name = "local"
		s, err := local.Open(dir, m, cfg)
		if err != nil {
			return nil, err
		}
		g := &guarded{Scheduler: s, overlap: make(chan struct{})}
		guardedMu.Lock()
		defer guardedMu.Unlock()
		guards = append(guards, g)
		return g, nil
	})
}

func (g *guarded) enter() func() {
	if g.inflight.Add(1) > 1 && g.overlaps.Add(1) == 1 {
		close(g.overlap)
	}
	return func() { g.inflight.Add(-1) }
}

func (g *guarded) Poll(ctx context.Context, jobs []scheduler.PollJob) (*scheduler.Poll, error) {
	defer g.enter()()
	g.mu.Lock()
	hold, entered, release := g.hold, g.entered, g.release
	g.hold = false
	g.mu.Unlock()
	if hold {
		close(entered)
		<-release
	}
	return g.Scheduler.Poll(ctx, jobs)
}

func (g *guarded) Cancel(ctx context.Context, targets []string) error {
	defer g.enter()()
	return g.Scheduler.Cancel(ctx, targets)
}

// stateOf is the state of the cell named name in snap.
func stateOf(snap Snapshot, name string) string {
	for _, sw := range snap.Sweeps {
		for _, c := range sw.Cells {
			if c.Name == name {
				return c.State
			}
		}
	}
	return ""
}

// waitFor polls src until ok holds of a snapshot (a minute at most: the
// machine may be loaded).
func waitFor(t *testing.T, src *laneSource, what string, ok func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		snap := src.Poll(context.Background())
		if ok(snap) {
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute: %+v", what, snap.Sweeps)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A poll that comes while a cancel runs on the real local executor waits
// for the cancel: the sweep's scheduler is never used by both at once
// (a scheduler that keeps state, as Slurm's does, would race under
// -race). The cancel ends only the cell it names.
func TestCancelDuringPoll(t *testing.T) {
	harness, _ := filepath.Abs("../examples/harness/phase1_sim.py")
	spec := fmt.Sprintf(`version: 1
name: live
scheduler: local
harness:
  command: [python3, %q, --results-dir, "{{.CellDir}}", --sim, "{{.Params.sim}}"]
topologies: {aggregated: {resources: {time: 1h}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], sim: ["sleep:600", "sleep:599"]}
`, harness)
	guardedMu.Lock()
	guards = nil
	guardedMu.Unlock()
	dir, _ := rendertest.Render(t, "live.yaml", []byte(spec), render.Options{SweepID: "live-cancel"})
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_, _ = scheduler.Submit(ctx, dir, local.New(local.Config{Dir: dir, Parallel: 2, Grace: time.Second}), scheduler.SubmitOptions{})
	}()
	t.Cleanup(func() { stop(); <-ran })

	var out, errw bytes.Buffer
	l := localLane(&out, &errw)
	l.Submit.Sched = &scheduler.Config{Name: "guarded"}
	src := newLaneSource(l, []string{dir}, time.Second)
	const a, b = "vllm-aggregated-g-sim-sleep-600", "vllm-aggregated-g-sim-sleep-599"
	snap := waitFor(t, src, "two running cells", func(s Snapshot) bool {
		return stateOf(s, a) == scheduler.StateRunning && stateOf(s, b) == scheduler.StateRunning
	})
	var id string
	for _, c := range snap.Sweeps[0].Cells {
		if c.Name == a {
			id = c.ID
		}
	}
	guardedMu.Lock()
	if len(guards) != 1 {
		t.Fatalf("%d schedulers opened, want the one the polls use", len(guards))
	}
	g := guards[0]
	guardedMu.Unlock()
	g.mu.Lock()
	g.hold, g.entered, g.release = true, make(chan struct{}), make(chan struct{})
	entered, release := g.entered, g.release
	g.mu.Unlock()

	type result struct {
		text string
		err  error
	}
	cancelled := make(chan result)
	go func() {
		text, err := src.Cancel(context.Background(), dir, id)
		cancelled <- result{text, err}
	}()
	<-entered // the cancel's poll of the states is in the scheduler
	polled := make(chan Snapshot)
	go func() { polled <- src.Poll(context.Background()) }()
	// The view's next poll must not reach the scheduler while the cancel
	// is in it; two seconds give it the time to, were it free to.
	select {
	case <-g.overlap:
	case <-time.After(2 * time.Second):
	}
	close(release)
	r := <-cancelled
	<-polled
	if n := g.overlaps.Load(); n != 0 {
		t.Errorf("%d calls on the sweep's scheduler while the cancel was in it", n)
	}
	if r.err != nil || r.text != "cancelled 1 task(s) of cell "+id {
		t.Fatalf("cancel: %q, %v", r.text, r.err)
	}
	snap = waitFor(t, src, "the cancelled cell ended", func(s Snapshot) bool { return scheduler.Terminal(stateOf(s, a)) })
	if sa, sb := stateOf(snap, a), stateOf(snap, b); sa != scheduler.StateCancelled || sb != scheduler.StateRunning {
		t.Errorf("after cancelling %s: it is %s and %s is %s; want CANCELLED and RUNNING", a, sa, b, sb)
	}
}
