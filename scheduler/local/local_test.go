package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/rendertest"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
	"github.com/kvsweep/kvsweep/sweep"
)

// localSweep renders a sweep of the simulated harness, one cell per sim
// mode, with the given time limit. A "sleep:600" cell goes to a topology
// of its own with a 2 s limit, so it times out however fast the machine
// is, while the others have a limit no loaded machine reaches.
func localSweep(t *testing.T, sims []string, limit string) (string, *sweep.Manifest) {
	t.Helper()
	harness, _ := filepath.Abs("../../examples/harness/phase1_sim.py")
	q := make([]string, len(sims))
	exclude := []string{`{topology: aggregated, sim: "sleep:600"}`}
	for i, s := range sims {
		q[i] = fmt.Sprintf("%q", s)
		if s != "sleep:600" {
			exclude = append(exclude, fmt.Sprintf("{topology: short, sim: %q}", s))
		}
	}
	topology := "[aggregated]"
	if slices.Contains(sims, "sleep:600") {
		topology = "[aggregated, short]"
	} else {
		exclude = nil
	}
	src := fmt.Sprintf(`version: 1
name: local
scheduler: local
harness:
  command: [python3, %q, --results-dir, "{{.CellDir}}", --sim, "{{.Params.sim}}"]
topologies: {aggregated: {resources: {time: %s}}, short: {kind: aggregated, resources: {time: 2s}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: %s, geometry: [g], case: [TC-01], sim: [%s], exclude: [%s]}
`, harness, limit, topology, strings.Join(q, ", "), strings.Join(exclude, ", "))
	dir, m := rendertest.Render(t, "local.yaml", []byte(src), render.Options{SweepID: "local-test"})
	return dir, m
}

func runLocal(t *testing.T, ctx context.Context, dir string, parallel int) []scheduler.CellStatus {
	t.Helper()
	l := local.New(local.Config{Dir: dir, Parallel: parallel, Grace: time.Second})
	rep, err := scheduler.Submit(ctx, dir, l, scheduler.SubmitOptions{})
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	if rep.Final != nil {
		return rep.Final
	}
	cells, _, err := scheduler.Status(context.Background(), dir, l)
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

func TestLocalOutcomes(t *testing.T) {
	dir, m := localSweep(t, []string{"pass", "exit:3", "sleep:600"}, "1h")
	cells := runLocal(t, context.Background(), dir, 3)
	want := map[string]string{"vllm-aggregated-g-sim-pass": scheduler.StateCompleted, "vllm-aggregated-g-sim-exit-3": scheduler.StateFailed, "vllm-short-g-sim-sleep-600": scheduler.StateTimeout}
	for _, c := range cells {
		if c.State != want[c.Name] {
			t.Errorf("%s: %s (exit %d), want %s", c.Name, c.State, c.ExitCode, want[c.Name])
		}
		if c.Name == "vllm-aggregated-g-sim-exit-3" && c.ExitCode != 3 {
			t.Errorf("%s: exit %d, want 3", c.Name, c.ExitCode)
		}
	}
	// The job saw Slurm's variables: its result names the array task.
	var res struct {
		Slurm struct {
			ArrayJobID  string `json:"array_job_id"`
			ArrayTaskID string `json:"array_task_id"`
		} `json:"slurm"`
	}
	c0 := m.Cells[0]
	b, err := os.ReadFile(filepath.Join(dir, "cells", c0.ID, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Slurm.ArrayJobID != "1" || res.Slurm.ArrayTaskID != fmt.Sprint(c0.Index) {
		t.Errorf("SLURM_ARRAY_* in the job: %+v %v", res.Slurm, err)
	}
	// The timed-out job wrote its exit marker from the TERM trap.
	for _, c := range cells {
		if c.State == scheduler.StateTimeout {
			mk, ok, _ := sweep.ReadExitMarker(dir, c.ID)
			if !ok || mk.Signal != "TERM" || mk.ExitCode != 143 {
				t.Errorf("timeout exit marker: %+v %v", mk, ok)
			}
		}
	}
}

// At most Parallel tasks run at once.
func TestLocalConcurrency(t *testing.T) {
	dir, _ := localSweep(t, []string{"sleep:1", "sleep:1.1", "sleep:1.2", "sleep:1.3", "sleep:1.4"}, "1m")
	runLocal(t, context.Background(), dir, 2)
	recs, _ := sweep.ReadJournal(dir)
	running, peak := 0, 0
	for _, r := range recs {
		switch {
		case r.Type == sweep.RecStarted && r.TaskID != "":
			running++
			peak = max(peak, running)
		case r.Type == sweep.RecFinished:
			running--
		}
	}
	if peak != 2 {
		t.Errorf("peak concurrency %d, want 2", peak)
	}
}

// Cancelling (Ctrl-C) terminates running tasks and records queued ones.
func TestLocalCancel(t *testing.T) {
	// The tasks sleep far longer than any machine takes to cancel them: a
	// run that lasts that long did not cancel, however loaded the machine.
	dir, _ := localSweep(t, []string{"sleep:300", "sleep:301"}, "1h")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	cells := runLocal(t, ctx, dir, 1)
	if d := time.Since(start); d > 250*time.Second {
		t.Errorf("cancel took %s: the tasks ran to their end", d)
	}
	for _, c := range cells {
		if c.State != scheduler.StateCancelled {
			t.Errorf("%s: %s, want CANCELLED", c.Name, c.State)
		}
	}
}

// A sidecar job starts one service per worker, each told its index, with
// sockets in the services directory the harness is given; the services end
// with the job.
func TestLocalSidecar(t *testing.T) { testServices(t, "sidecar", "", 2) }

// Every kind starts the topology's services, not only sidecar: 2P+1D
// starts one per worker, three.
func TestLocalDisaggServices(t *testing.T) {
	testServices(t, "disagg-2p1d", "gpus_per_node: 2, ", 3)
}

func testServices(t *testing.T, kind, gpus string, workers int) {
	t.Helper()
	src := `version: 1
name: sidecar
scheduler: local
harness:
  command:
    - bash
    - -c
    - 'for i in $(seq 0 %d); do for _ in $(seq 600); do test -S "$0/kvcr-$i.sock" && break; sleep 0.1; done; test -S "$0/kvcr-$i.sock" || exit 7; done; echo "$0" > "$0/../harness-saw"'
  cases_flag: ""
topologies:
  %s:
    resources: {%stime: 1h}
    args: ["{{.CellDir}}/services"]
    service: [python3, -c, 'import os, socket, time; s = socket.socket(socket.AF_UNIX); s.bind(os.path.join(os.environ["KVSWEEP_SERVICES_DIR"], "kvcr-%%s.sock" %% os.environ["KVCR_SERVICE_INDEX"])); s.listen(); time.sleep(300)']
geometries: {g: {flags: {}}}
matrix: {engine: [vllm], topology: [%s], geometry: [g], case: [TC-01]}
`
	src = fmt.Sprintf(src, workers-1, kind, gpus, kind)
	dir, m := rendertest.Render(t, "services.yaml", []byte(src), render.Options{SweepID: "services-" + kind})
	start := time.Now()
	cells := runLocal(t, context.Background(), dir, 1)
	if cells[0].State != scheduler.StateCompleted {
		log, _ := os.ReadFile(filepath.Join(dir, "cells", cells[0].ID, "slurm-1_0.out"))
		t.Fatalf("sidecar cell: %s exit %d\n%s", cells[0].State, cells[0].ExitCode, log)
	}
	// The services sleep 300 s: the job stops them when the harness is done.
	if d := time.Since(start); d > 250*time.Second {
		t.Errorf("the job waited %s: its services were not stopped", d)
	}
	for i := 0; ; i++ {
		out, _ := exec.Command("pgrep", "-f", `kvcr-%s.sock`).Output()
		if len(strings.TrimSpace(string(out))) == 0 {
			break
		}
		if i == 50 {
			t.Fatalf("service processes outlived the job: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cellDir := filepath.Join(dir, "cells", m.Cells[0].ID)
	if b, err := os.ReadFile(filepath.Join(cellDir, "harness-saw")); err != nil || strings.TrimSpace(string(b)) != filepath.Join(cellDir, "services") {
		t.Errorf("the harness got %q, want the services directory", b)
	}
	for i := range workers {
		if _, err := os.Stat(filepath.Join(cellDir, "services", fmt.Sprintf("service-%d.log", i))); err != nil {
			t.Errorf("service %d log: %v", i, err)
		}
	}
}

// A status query only reads; Observe (what follows a sweep) records the
// terminal states it saw in observed.json.
func TestStatusOnlyReads(t *testing.T) {
	dir, _ := localSweep(t, []string{"pass"}, "1h")
	runLocal(t, context.Background(), dir, 1)
	obs := filepath.Join(dir, sweep.ObservedFile)
	must := func(err error) {
		t.Helper()
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	must(os.Remove(obs))
	l := local.New(local.Config{Dir: dir})
	before, _ := os.ReadDir(dir)
	if _, _, err := scheduler.Status(context.Background(), dir, l); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadDir(dir)
	if len(after) != len(before) {
		t.Fatalf("status wrote into the sweep directory: %d entries before, %d after", len(before), len(after))
	}
	if _, _, err := scheduler.Observe(context.Background(), dir, l); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(obs); err != nil {
		t.Fatalf("observe recorded nothing: %v", err)
	}
}

// With one job per cell (--no-array), a queued task of a live executor is
// PENDING, not LOST.
func TestLocalQueuedNoArray(t *testing.T) {
	harness, _ := filepath.Abs("../../examples/harness/phase1_sim.py")
	src := fmt.Sprintf(`version: 1
name: queued
scheduler: local
harness:
  command: [python3, %q, --results-dir, "{{.CellDir}}", --sim, "{{.Params.sim}}"]
topologies: {aggregated: {resources: {time: 1h}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], sim: ["sleep:300", "sleep:301"]}
`, harness)
	dir, _ := rendertest.Render(t, "queued.yaml", []byte(src), render.Options{SweepID: "queued", NoArray: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = scheduler.Submit(ctx, dir, local.New(local.Config{Dir: dir, Parallel: 1, Grace: time.Second}), scheduler.SubmitOptions{})
	}()
	t.Cleanup(func() { cancel(); <-done })
	for i := 0; ; i++ {
		cells, _, err := scheduler.Status(context.Background(), dir, local.New(local.Config{Dir: dir}))
		if err != nil {
			t.Fatal(err)
		}
		counts := scheduler.Counts(cells)
		if counts[scheduler.StateRunning] == 1 {
			if counts[scheduler.StatePending] != 1 {
				t.Fatalf("one task runs; the queued one is %s", scheduler.CountsLine(cells))
			}
			return
		}
		if i == 1200 {
			t.Fatalf("no task started: %s", scheduler.CountsLine(cells))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
