package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/loadsearch"
	"github.com/kvsweep/kvsweep/sweep"
)

// The stand-in server's knees (the load at which its p99 TTFT crosses
// the 500 ms SLO), one cell each, and the search's range and step.
var searchKnees = map[string]float64{"12.5": 12.5, "23.4": 23.4}

const searchMin, searchMax, searchStep = 1.0, 32.0, 1.0

// searchSpec writes the spec of a search over the stand-in server with a
// known knee (testdata/knee-harness.sh) on the Slurm test cluster: a cell
// per knee, 2 repeats a probe; each run is logged in log.
func searchSpec(t *testing.T, dir, log string, sleep int) string {
	t.Helper()
	harness, _ := filepath.Abs("testdata/knee-harness.sh")
	return writeSpec(t, dir, fmt.Sprintf(`version: 1
name: knee
container: {runtime: none}
harness:
  command: [%q, "{{.CellDir}}", "{{.Params.rate}}", "{{.Params.repeat}}", "{{.Params.knee}}", %q, "%d"]
  cases_flag: ""
search: {min: %g, max: %g, step: %g, repeats: 2, slo: {ttft_p99_ms: 500, itl_p99_ms: 50, failed: 0}}
topologies: {aggregated: {resources: {gpus_per_node: 1, cpus_per_task: 1, mem: 100M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], knee: ["12.5", "23.4"]}
`, harness, log, sleep, searchMin, searchMax, searchStep))
}

// searchArgs are the arguments of a search of spec into dir on cluster c.
func searchArgs(spec, dir string) []string {
	return []string{"search", spec, "--out", dir, "--scheduler", "slurm", "--interval", "1s", "--store", filepath.Join(filepath.Dir(dir), "history.db")}
}

// checkKnees holds the search's frontier to the stand-in's knees: each
// cell's operating point within one step below its knee, the interval
// around it, in at most ceil(log2((max-min)/step)) + 2 rounds.
func checkKnees(t *testing.T, dir string) *frontier.Frontier {
	t.Helper()
	f, err := frontier.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Cells) != len(searchKnees) || f.Stopped != "" {
		t.Fatalf("frontier: %d cells, stopped %q", len(f.Cells), f.Stopped)
	}
	bound := int(math.Ceil(math.Log2((searchMax-searchMin)/searchStep))) + 2
	for _, c := range f.Cells {
		knee, ok := 0.0, false
		for name, k := range searchKnees {
			if strings.Contains(c.Name, "knee-"+name) {
				knee, ok = k, true
			}
		}
		if !ok || c.Point == nil {
			t.Fatalf("cell %s: no knee in its name, or no point (%q)", c.Name, c.Note)
		}
		if d := knee - c.Point.Load; d < 0 || d > searchStep {
			t.Errorf("cell %s: operating point %g, knee %g: not within one step below it", c.Name, c.Point.Load, knee)
		}
		if c.Point.Low > knee || c.Point.High < knee {
			t.Errorf("cell %s: interval %g..%g misses the knee %g", c.Name, c.Point.Low, c.Point.High, knee)
		}
		if len(c.Probes) > bound {
			t.Errorf("cell %s: %d rounds, want at most %d", c.Name, len(c.Probes), bound)
		}
		for _, p := range c.Probes {
			if len(p.Repeats) != 2 {
				t.Errorf("cell %s: load %g has %d repeats, want 2", c.Name, p.Load, len(p.Repeats))
			}
		}
	}
	return f
}

// On the test Slurm cluster, against the stand-in with a known knee, the
// search lands within one step of each cell's knee, the cells probed side
// by side (one sweep a round), and prints the frontier table.
func TestSearchKnee(t *testing.T) {
	c := clusters(t)[0]
	tmp := t.TempDir()
	log := filepath.Join(tmp, "runs.log")
	spec, dir := searchSpec(t, tmp, log, 0), filepath.Join(tmp, "search")
	t.Cleanup(func() { cancelRounds(t, c, dir) })
	out := mustKvsweep(t, c, searchArgs(spec, dir)...)
	t.Logf("kvsweep search:\n%s", out)
	f := checkKnees(t, dir)
	for _, cell := range f.Cells {
		if !strings.Contains(out, fmt.Sprintf("%s (%s) | %g req/s", cell.Name, cell.ID, cell.Point.Load)) {
			t.Errorf("the table does not give %s's point %g req/s:\n%s", cell.Name, cell.Point.Load, out)
		}
	}
	rounds, _ := filepath.Glob(filepath.Join(dir, "round-*"))
	probes := 0
	for _, cell := range f.Cells {
		probes = max(probes, len(cell.Probes))
	}
	if len(rounds) != probes {
		t.Errorf("%d round sweeps for cells of at most %d probes: the cells' probes did not share rounds", len(rounds), probes)
	}
	noRunTwice(t, log, dir)
}

// Killed (SIGKILL) once its first round's jobs were submitted, and
// started again, the search gives the same answer, and no probe is
// submitted or run twice.
func TestSearchResumeAfterKill(t *testing.T) {
	c := clusters(t)[0]
	tmp := t.TempDir()
	log := filepath.Join(tmp, "runs.log")
	spec, dir := searchSpec(t, tmp, log, 3), filepath.Join(tmp, "search")
	t.Cleanup(func() { cancelRounds(t, c, dir) })
	cmd := exec.Command(binary, searchArgs(spec, dir)...)
	cmd.Env = append(os.Environ(), c.env()...)
	var first syncBuffer
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for submitted := false; !submitted; {
		select {
		case err := <-done:
			t.Fatalf("the search ended (%v) before it could be killed:\n%s", err, first.String())
		case <-time.After(200 * time.Millisecond):
		}
		recs, _ := sweep.ReadJournal(filepath.Join(dir, loadsearch.RoundDir(1)))
		for _, r := range recs {
			submitted = submitted || r.Type == sweep.RecSubmitted
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	if _, err := os.Stat(filepath.Join(dir, loadsearch.RoundDir(2))); err == nil {
		t.Fatalf("round 2 began before the kill: the test kills nothing mid-round\n%s", first.String())
	}
	out, errs, err := kvsweep(t, c, nil, searchArgs(spec, dir)...)
	if err != nil {
		t.Fatalf("the search started again: %v\n%s%s\nbefore the kill:\n%s", err, out, errs, first.String())
	}
	if !strings.Contains(errs, "going on with search") {
		t.Errorf("the search started again does not say it goes on:\n%s", errs)
	}
	checkKnees(t, dir)
	noRunTwice(t, log, dir)
}

// noRunTwice checks that every cell of every round's sweep was submitted
// once (its journal) and run once (the stand-in's log).
func noRunTwice(t *testing.T, log, dir string) {
	t.Helper()
	rounds, _ := filepath.Glob(filepath.Join(dir, "round-*"))
	cells := 0
	for _, r := range rounds {
		recs, err := sweep.ReadJournal(r)
		if err != nil {
			t.Fatal(err)
		}
		m, err := sweep.ReadManifest(r)
		if err != nil {
			t.Fatal(err)
		}
		cells += len(m.Cells)
		submitted := map[string]int{}
		for _, s := range sweep.Submissions(recs) {
			if !s.Abandoned {
				for _, cell := range m.CellsOf(s.Intent) {
					submitted[cell.ID]++
				}
			}
		}
		for _, cell := range m.Cells {
			if submitted[cell.ID] != 1 {
				t.Errorf("%s: cell %s submitted %d times, want once", r, cell.Name, submitted[cell.ID])
			}
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines {
		if runs[l]++; runs[l] == 2 {
			t.Errorf("the stand-in ran %q twice", l)
		}
	}
	if len(lines) != cells {
		t.Errorf("the stand-in ran %d times for %d cells of %d rounds", len(lines), cells, len(rounds))
	}
}

// cancelRounds cancels what is left of each round's sweep.
func cancelRounds(t *testing.T, c cluster, dir string) {
	rounds, _ := filepath.Glob(filepath.Join(dir, "round-*"))
	for _, r := range rounds {
		cancelSweep(t, c, r)
	}
}
