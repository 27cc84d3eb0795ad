package loadsearch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/matrix"
)

// server is a simulated deployment with a known knee: its p99 TTFT is
// flat (200 ms) up to two steps below the knee, then rises 150 ms per
// req/s, crossing the 500 ms SLO exactly at the knee; ITL stays at 20 ms.
// Each repeat's figures carry normal noise of cv times the mean.
type server struct {
	knee  map[string]float64 // by cell
	cv    float64
	rng   *rand.Rand
	infra map[string]int // cell@load: how many more rounds every repeat fails outside the test
	calls map[int]int    // round: times asked
}

func (s *server) ttft(cell string, x float64) float64 {
	return 200 + 150*max(0, x-(s.knee[cell]-2))
}

func (s *server) Probe(_ context.Context, round int, reqs []Request) ([]Result, error) {
	if s.calls == nil {
		s.calls = map[int]int{}
	}
	s.calls[round]++
	var out []Result
	for _, r := range reqs {
		res := Result{Cell: r.Cell, Load: r.Load, GPUHours: 0.5 * float64(r.Repeats)}
		for i := range r.Repeats {
			rep := frontier.Repeat{Run: RoundDir(round), Cell: fmt.Sprintf("%s-%d", r.Cell, i), Verdict: "PASS"}
			if s.infra[key(r.Cell, r.Load)] > 0 {
				rep.Verdict = Infra
			} else {
				noise := func(m float64) float64 { return m * (1 + s.cv*s.rng.NormFloat64()) }
				rep.Figures = map[string]float64{frontier.TTFTP99: noise(s.ttft(r.Cell, r.Load)), frontier.ITLP99: noise(20),
					frontier.Throughput: noise(min(r.Load, s.knee[r.Cell]*1.1) * 0.98)}
			}
			res.Repeats = append(res.Repeats, rep)
		}
		if s.infra[key(r.Cell, r.Load)] > 0 {
			s.infra[key(r.Cell, r.Load)]--
		}
		out = append(out, res)
	}
	return out, nil
}

func config(repeats int) Config {
	return Config{Search: matrix.Search{Axis: matrix.SearchRate, Min: 1, Max: 64, Start: 16, Step: 1, Repeats: repeats, Noise: 0.1, Reprobes: 2,
		SLO: []matrix.SLO{{Metric: frontier.TTFTP99, Max: 500}, {Metric: frontier.ITLP99, Max: 50}}}}
}

func newSearch(c Config, knees map[string]float64) *Search {
	f := &frontier.Frontier{Name: "sim", Axis: frontier.Rate, Repeats: c.Repeats}
	for _, id := range sortedKeys(knees) {
		f.Cells = append(f.Cells, frontier.Cell{ID: id})
	}
	return &Search{Config: c, Frontier: f}
}

func sortedKeys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// The search lands within one step of the knee, every cell in parallel,
// in at most ceil(log2((max-min)/step)) + 2 rounds per cell.
func TestSearchFindsKnee(t *testing.T) {
	knees := map[string]float64{}
	for i, k := range []float64{1.5, 3.3, 7.8, 12.2, 16.5, 23.4, 31.6, 33.2, 40.7, 47.9, 55.1, 60.5, 63.7} {
		knees[fmt.Sprintf("c%02d", i)] = k
	}
	c := config(3)
	srv := &server{knee: knees, cv: 0.03, rng: rand.New(rand.NewPCG(1, 2))}
	s := newSearch(c, knees)
	if err := s.Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	bound := int(math.Ceil(math.Log2((c.Max-c.Min)/c.Step))) + 2
	for _, cell := range s.Frontier.Cells {
		k := knees[cell.ID]
		if cell.Point == nil {
			t.Fatalf("cell %s (knee %g): no point; note %q, probes %v", cell.ID, k, cell.Note, loads(cell))
		}
		if d := k - cell.Point.Load; d < 0 || d > c.Step {
			t.Errorf("cell %s: operating point %g, knee %g: not within one step below it (probes %v)", cell.ID, cell.Point.Load, k, loads(cell))
		}
		if len(cell.Probes) > bound {
			t.Errorf("cell %s (knee %g): %d rounds, want at most %d: %v", cell.ID, k, len(cell.Probes), bound, loads(cell))
		}
		if cell.Point.Low > cell.Point.Load || cell.Point.High < cell.Point.Load {
			t.Errorf("cell %s: interval %g..%g does not hold the point %g", cell.ID, cell.Point.Low, cell.Point.High, cell.Point.Load)
		}
		if cell.Point.Throughput.N != 3 {
			t.Errorf("cell %s: throughput at the point over %d repeats, want 3", cell.ID, cell.Point.Throughput.N)
		}
	}
	if s.Frontier.Stopped != "" {
		t.Errorf("Stopped %q, want empty", s.Frontier.Stopped)
	}
}

func loads(c frontier.Cell) []string {
	var out []string
	for _, p := range c.Probes {
		v := "✗"
		if p.Meets {
			v = "✓"
		}
		out = append(out, num(p.Load)+v)
	}
	return out
}

// A probe whose repeats spread past the bound is said to be noisy.
func TestSearchNoisy(t *testing.T) {
	knees := map[string]float64{"c": 20.5}
	s := newSearch(config(4), knees)
	if err := s.Run(context.Background(), &server{knee: knees, cv: 0.3, rng: rand.New(rand.NewPCG(3, 3))}); err != nil {
		t.Fatal(err)
	}
	noisy := 0
	for _, p := range s.Frontier.Cells[0].Probes {
		if p.Noisy {
			noisy++
		}
	}
	if noisy == 0 {
		t.Errorf("no probe said noisy at a 30 %% spread over a 10 %% bound: %v", loads(s.Frontier.Cells[0]))
	}
}

// The budget stops the search, saying why and what each cell knows.
func TestSearchBudget(t *testing.T) {
	knees := map[string]float64{"a": 20.5, "b": 40.5}
	for _, tc := range []struct {
		c    func(*Config)
		want string
		n    int
	}{
		{func(c *Config) { c.MaxProbes = 5 }, "--max-probes 5 reached", 5},
		{func(c *Config) { c.GPUHours = 5 }, "--gpu-hours 5 reached (6 GPU-hours used)", 4},
	} {
		c := config(3)
		tc.c(&c)
		s := newSearch(c, knees)
		if err := s.Run(context.Background(), &server{knee: knees, rng: rand.New(rand.NewPCG(1, 1))}); err != nil {
			t.Fatal(err)
		}
		if s.Frontier.Stopped != tc.want {
			t.Errorf("Stopped %q, want %q", s.Frontier.Stopped, tc.want)
		}
		n := 0
		for _, cell := range s.Frontier.Cells {
			n += len(cell.Probes)
			if !strings.HasPrefix(cell.Note, "budget reached: ") {
				t.Errorf("cell %s: note %q, want the budget and what it knows", cell.ID, cell.Note)
			}
		}
		if n != tc.n {
			t.Errorf("%s: %d probes, want %d", tc.want, n, tc.n)
		}
	}
}

// A load whose repeats all failed outside the test is probed again, never
// read as a breach; one that keeps failing ends the cell saying so.
func TestSearchInfra(t *testing.T) {
	knees := map[string]float64{"a": 20.5, "b": 20.5}
	srv := &server{knee: knees, rng: rand.New(rand.NewPCG(1, 1)), infra: map[string]int{key("a", 16): 1, key("b", 16): 10}}
	s := newSearch(config(2), knees)
	if err := s.Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	a, b := s.Frontier.Cells[0], s.Frontier.Cells[1]
	if a.Point == nil || a.Point.Load != 20 || a.Probes[0].Load != 16 || a.Probes[1].Load != 16 {
		t.Errorf("cell a: probes %v, point %+v: want 16 probed again after its infra failures, then the knee", loads(a), a.Point)
	}
	if !a.Probes[0].Infra || a.Probes[0].Meets || len(a.Probes[0].Broken) != 0 || a.Probes[1].Infra {
		t.Errorf("cell a: first probe %+v, second %+v: want the first infra, neither met nor broken", a.Probes[0], a.Probes[1])
	}
	if b.Point != nil || len(b.Probes) != 3 || b.Note != "every repeat at 16 req/s failed outside the test, 3 times" {
		t.Errorf("cell b: probes %v, note %q", loads(b), b.Note)
	}
}

// killer is a prober that stops the search once it reaches a round, as a
// kill after the round's jobs were submitted would.
type killer struct {
	*server
	at int
}

func (k *killer) Probe(ctx context.Context, round int, reqs []Request) ([]Result, error) {
	if round == k.at {
		k.server.calls[round]++
		return nil, errors.New("killed")
	}
	return k.server.Probe(ctx, round, reqs)
}

// Stopped after a round was planned and started again, the search goes on
// with that round and reaches the same answer as one never stopped.
func TestSearchResume(t *testing.T) {
	knees := map[string]float64{"a": 23.4, "b": 5.5}
	whole := newSearch(config(3), knees)
	if err := whole.Run(context.Background(), &server{knee: knees, rng: rand.New(rand.NewPCG(9, 9))}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srv := &server{knee: knees, rng: rand.New(rand.NewPCG(9, 9)), calls: map[int]int{}}
	args := map[string]string{"spec": "s.yaml"}
	first := newSearch(config(3), knees)
	first.Dir = dir
	if err := first.Open(args, func() string { return "search-1" }); err != nil {
		t.Fatal(err)
	}
	if err := first.Run(context.Background(), &killer{srv, 3}); err == nil || err.Error() != "killed" {
		t.Fatalf("first run: %v, want killed", err)
	}
	srv.calls[3] = 0 // the killed round's jobs ran nowhere: it is asked again
	again := newSearch(config(3), knees)
	again.Dir = dir
	if err := again.Open(args, func() string { return "search-2" }); err != nil {
		t.Fatal(err)
	}
	if again.ID() != "search-1" {
		t.Errorf("id %q after the restart, want search-1", again.ID())
	}
	if err := again.Run(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	for round, n := range srv.calls {
		if n > 1 {
			t.Errorf("round %d asked %d times", round, n)
		}
	}
	read, err := frontier.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range whole.Frontier.Cells {
		w, g := whole.Frontier.Cells[i], read.Cells[i]
		if fmt.Sprint(loads(w)) != fmt.Sprint(loads(g)) || *w.Point != *g.Point {
			t.Errorf("cell %s: resumed %v %+v, whole %v %+v", w.ID, loads(g), *g.Point, loads(w), *w.Point)
		}
	}
	other := newSearch(config(3), knees)
	other.Dir = dir
	if err := other.Open(map[string]string{"spec": "t.yaml"}, func() string { return "x" }); err == nil || !strings.Contains(err.Error(), `started with spec "s.yaml", not "t.yaml"`) {
		t.Errorf("open with another spec: %v", err)
	}
}

// A search directory whose state is not a search's, or a link out of it,
// is refused naming the file; nothing is run.
func TestOpenRefuses(t *testing.T) {
	for name, setup := range map[string]func(dir string) error{
		"garbage": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, StateFile), []byte("{\"version\": 7}"), 0o644)
		},
		"a link": func(dir string) error {
			target := filepath.Join(t.TempDir(), "x.json")
			if err := os.WriteFile(target, []byte(`{"version":1}`), 0o644); err != nil {
				return err
			}
			return os.Symlink(target, filepath.Join(dir, StateFile))
		},
	} {
		dir := t.TempDir()
		if err := setup(dir); err != nil {
			t.Fatal(err)
		}
		s := newSearch(config(2), map[string]float64{"a": 3})
		s.Dir = dir
		err := s.Open(map[string]string{}, func() string { return "x" })
		if err == nil || !strings.Contains(err.Error(), StateFile) {
			t.Errorf("%s: %v, want a refusal naming %s", name, err, StateFile)
		}
	}
}

// recorder is a server that keeps every probe it ran (cell@load) and each
// round's requests.
type recorder struct {
	*server
	ran    []string
	rounds map[int][]string
}

func (r *recorder) Probe(ctx context.Context, round int, reqs []Request) ([]Result, error) {
	if r.rounds == nil {
		r.rounds = map[int][]string{}
	}
	for _, q := range reqs {
		r.ran = append(r.ran, key(q.Cell, q.Load))
		r.rounds[round] = append(r.rounds[round], key(q.Cell, q.Load))
	}
	return r.server.Probe(ctx, round, reqs)
}

// A round planned before a stop runs whole when the search is started
// again with a smaller budget (its jobs may be running): nothing is
// probed twice and no probe is thrown away; the budget stops the search
// after it.
func TestSearchResumeSmallerBudget(t *testing.T) {
	knees := map[string]float64{"a": 20.5, "b": 40.5}
	for _, tc := range []struct {
		budget func(*Config)
		want   string
	}{
		{func(c *Config) { c.MaxProbes = 3 }, "--max-probes 3 reached"},
		{func(c *Config) { c.GPUHours = 2 }, "--gpu-hours 2 reached (6 GPU-hours used)"},
	} {
		dir := t.TempDir()
		srv := &server{knee: knees, rng: rand.New(rand.NewPCG(4, 4)), calls: map[int]int{}}
		args := map[string]string{"spec": "s.yaml"}
		first := newSearch(config(3), knees)
		first.Dir = dir
		if err := first.Open(args, func() string { return "search-1" }); err != nil {
			t.Fatal(err)
		}
		if err := first.Run(context.Background(), &killer{srv, 2}); err == nil || err.Error() != "killed" {
			t.Fatalf("first run: %v, want killed", err)
		}
		c := config(3)
		tc.budget(&c)
		again := newSearch(c, knees)
		again.Dir = dir
		if err := again.Open(args, func() string { return "search-2" }); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{server: srv}
		if err := again.Run(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if want := []string{key("a", 32), key("b", 32)}; fmt.Sprint(rec.rounds[2]) != fmt.Sprint(want) {
			t.Errorf("%s: round 2 ran %v after the restart, want the planned %v", tc.want, rec.rounds[2], want)
		}
		if len(rec.rounds) != 1 || again.Frontier.Stopped != tc.want {
			t.Errorf("%s: rounds run %v, stopped %q", tc.want, rec.rounds, again.Frontier.Stopped)
		}
		for _, cell := range again.Frontier.Cells {
			if got := fmt.Sprint(loads(cell)); got != "[16✓ 32✓]" && got != "[16✓ 32✗]" {
				t.Errorf("%s: cell %s probes %s, want 16 and 32 each once", tc.want, cell.ID, got)
			}
		}
	}
}

// A cell that finished before the budget was reached keeps its answer
// without a budget note; one not done says the budget stopped it.
func TestSearchBudgetDoneCell(t *testing.T) {
	knees := map[string]float64{"a": 1.5, "b": 40.5}
	c := config(3)
	c.MaxProbes = 10
	s := newSearch(c, knees)
	if err := s.Run(context.Background(), &server{knee: knees, rng: rand.New(rand.NewPCG(1, 1))}); err != nil {
		t.Fatal(err)
	}
	a, b := s.Frontier.Cells[0], s.Frontier.Cells[1]
	if a.Point == nil || a.Point.Load != 1 || a.Note != "" {
		t.Errorf("cell a (done after %v): point %+v, note %q; want 1 req/s and no note", loads(a), a.Point, a.Note)
	}
	if !strings.HasPrefix(b.Note, "budget reached: the operating point is between 40 and ") {
		t.Errorf("cell b (%v): note %q, want the budget and its bracket", loads(b), b.Note)
	}
}

// A search stopped as it started, its state written and its frontier not
// (as an earlier kvsweep could leave it), goes on from an empty frontier
// under its id; one whose answer is gone after rounds ran is refused.
func TestOpenWithoutFrontier(t *testing.T) {
	knees := map[string]float64{"a": 20.5}
	dir := t.TempDir()
	state := `{"version": 1, "id": "search-1", "args": {"spec": "s.yaml"}, "gpu_hours": 0}`
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSearch(config(2), knees)
	s.Dir = dir
	if err := s.Open(map[string]string{"spec": "s.yaml"}, func() string { return "search-2" }); err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := s.Run(context.Background(), &server{knee: knees, rng: rand.New(rand.NewPCG(1, 1))}); err != nil {
		t.Fatal(err)
	}
	if s.ID() != "search-1" || s.Frontier.Cells[0].Point == nil || s.Frontier.Cells[0].Point.Load != 20 {
		t.Errorf("id %q, cell %+v: want search-1 going on to the point 20", s.ID(), s.Frontier.Cells[0])
	}
	if err := os.Remove(filepath.Join(dir, frontier.FileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, RoundDir(1)), 0o755); err != nil {
		t.Fatal(err)
	}
	again := newSearch(config(2), knees)
	again.Dir = dir
	err := again.Open(map[string]string{"spec": "s.yaml"}, func() string { return "x" })
	if err == nil || !strings.Contains(err.Error(), "has planned or run rounds, and its answer is gone") {
		t.Errorf("open without the frontier after rounds: %v", err)
	}
}
