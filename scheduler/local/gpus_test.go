package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/rendertest"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
	"github.com/kvsweep/kvsweep/sweep"
)

// gpuHarness is the task stand-in: it records the GPUs it was given and
// holds a lock directory per GPU while it runs, so two tasks given one GPU
// at once leave a violation, whatever the timing.
const gpuHarness = `#!/bin/bash
cell=$1 mode=$2
echo "${CUDA_VISIBLE_DEVICES-unset}|${NVIDIA_VISIBLE_DEVICES-unset}|${SLURM_JOB_GPUS-unset}" >"$cell/gpus"
IFS=, read -r -a ids <<<"${CUDA_VISIBLE_DEVICES:-}"
for id in "${ids[@]}"; do
	mkdir "$LOCKS/gpu-$id" 2>/dev/null || echo "GPU $id given to $cell while another task held it" >>"$LOCKS/violations"
done
case $mode in
sleep) sleep 600 ;;
crash) kill -KILL $$ ;;
*) sleep 0.0$((RANDOM % 9)) ;;
esac
for id in "${ids[@]}"; do rmdir "$LOCKS/gpu-$id"; done
`

// gpuSweep renders a sweep of the GPU stand-in: its topologies are g1, g2
// and g3 (1, 2 and 3 GPUs) plus any in extra, with the matrix rows given.
func gpuSweep(t *testing.T, matrixRows string) (dir, locks string) {
	t.Helper()
	tmp := t.TempDir()
	harness := filepath.Join(tmp, "harness.sh")
	locks = filepath.Join(tmp, "locks")
	if err := os.WriteFile(harness, []byte(gpuHarness), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`version: 1
name: gpus
scheduler: local
env: {set: {LOCKS: %q}}
harness:
  command: [%q, "{{.CellDir}}", "{{.Params.mode}}"]
topologies:
  g0: {kind: aggregated, resources: {gpus_per_node: 0, time: 1h}}
  g1: {kind: aggregated, resources: {gpus_per_node: 1, time: 1h}}
  g2: {kind: aggregated, resources: {gpus_per_node: 2, time: 1h}}
  g3: {kind: aggregated, resources: {gpus_per_node: 3, time: 1h}}
  short: {kind: aggregated, resources: {gpus_per_node: 2, time: 2s}}
geometries: {g: {flags: {model: m}}}
%s
`, locks, harness, matrixRows)
	dir, _ = rendertest.Render(t, "gpus.yaml", []byte(src), render.Options{SweepID: "gpus-test"})
	return dir, locks
}

func gpusOf(t *testing.T, dir, cellID string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, sweep.CellsDir, cellID, "gpus"))
	if err != nil {
		t.Fatalf("cell %s recorded no GPUs: %v", cellID, err)
	}
	return strings.TrimSpace(string(b))
}

// 54 tasks needing 0 to 3 GPUs on a pool of 4, eight at a time: every task
// gets exactly its own count, from the pool, and no two running tasks ever
// hold the same GPU.
func TestLocalGPUPoolDisjoint(t *testing.T) {
	n := make([]string, 18)
	for i := range n {
		n[i] = fmt.Sprint(i)
	}
	dir, locks := gpuSweep(t, fmt.Sprintf(`matrix: {engine: [vllm], topology: [g0, g1, g2, g3], geometry: [g], case: [TC-01], mode: [ok], n: [%s],
  exclude: [{topology: g0, n: "6"}, {topology: g0, n: "7"}, {topology: g0, n: "8"}, {topology: g0, n: "9"}, {topology: g0, n: "10"}, {topology: g0, n: "11"},
            {topology: g0, n: "12"}, {topology: g0, n: "13"}, {topology: g0, n: "14"}, {topology: g0, n: "15"}, {topology: g0, n: "16"}, {topology: g0, n: "17"}]}`,
		strings.Join(n, ", ")))
	pool := []string{"0", "1", "2", "3"}
	l := local.New(local.Config{Dir: dir, Parallel: 8, Grace: time.Second, GPUs: pool})
	rep, err := scheduler.Submit(context.Background(), dir, l, scheduler.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Final) != 60 {
		t.Fatalf("%d tasks, want 60", len(rep.Final))
	}
	m, _ := sweep.ReadManifest(dir)
	need := map[string]int{}
	for _, c := range m.Cells {
		need[c.ID] = int(c.Topology[1] - '0')
	}
	for _, c := range rep.Final {
		if c.State != scheduler.StateCompleted {
			t.Errorf("%s: %s", c.Name, c.State)
			continue
		}
		got := strings.Split(gpusOf(t, dir, c.ID), "|")
		var ids []string
		if got[0] != "" {
			ids = strings.Split(got[0], ",")
		}
		if len(ids) != need[c.ID] {
			t.Errorf("%s: given %q, want %d GPUs", c.Name, got[0], need[c.ID])
		}
		for _, id := range ids {
			if !strings.Contains(",0,1,2,3,", ","+id+",") {
				t.Errorf("%s: GPU %q is not in the pool", c.Name, id)
			}
		}
		wantNV := got[0]
		if wantNV == "" {
			wantNV = "void" // a task needing no GPU sees none
		}
		if got[1] != wantNV || got[2] != got[0] {
			t.Errorf("%s: CUDA_VISIBLE_DEVICES %q, NVIDIA_VISIBLE_DEVICES %q, SLURM_JOB_GPUS %q", c.Name, got[0], got[1], got[2])
		}
	}
	if b, err := os.ReadFile(filepath.Join(locks, "violations")); err == nil {
		t.Errorf("tasks shared GPUs:\n%s", b)
	}
}

// A task's GPUs come back however it ends: timed out, killed by cancel,
// crashed. Every task needs both GPUs of the pool, so one that kept them
// would leave the rest queued forever.
func TestLocalGPUPoolReleases(t *testing.T) {
	dir, _ := gpuSweep(t, `matrix:
  engine: [vllm]
  topology: [g2, short]
  geometry: [g]
  case: [TC-01]
  mode: [sleep, crash, cancel, ok]
  exclude: [{topology: g2, mode: sleep}, {topology: short, mode: crash}, {topology: short, mode: cancel}, {topology: short, mode: ok}]`)
	// "cancel" sleeps until kvsweep cancel stops it.
	m, _ := sweep.ReadManifest(dir)
	var victim string
	for _, c := range m.Cells {
		if c.Params["mode"] == "cancel" {
			victim = c.ID
		}
	}
	harness := m.Cells[0].Argv[0]
	b, _ := os.ReadFile(harness)
	if err := os.WriteFile(harness, []byte(strings.Replace(string(b), "sleep) sleep 600 ;;", "sleep | cancel) sleep 600 ;;", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	l := local.New(local.Config{Dir: dir, Parallel: 4, Grace: time.Second, GPUs: []string{"0", "1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan *scheduler.SubmitReport, 1)
	go func() {
		rep, err := scheduler.Submit(ctx, dir, l, scheduler.SubmitOptions{})
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	// Cancel the victim once it runs, as kvsweep cancel does from outside.
	for {
		cells, _, err := scheduler.Status(context.Background(), dir, local.New(local.Config{Dir: dir}))
		if err != nil {
			t.Fatal(err)
		}
		st := map[string]string{}
		for _, c := range cells {
			st[c.ID] = c.State
		}
		if st[victim] == scheduler.StateRunning && sweep.IsFile(dir, sweep.CellsDir+"/"+victim+"/gpus") {
			if _, err := scheduler.Cancel(context.Background(), dir, local.New(local.Config{Dir: dir}), []string{victim}); err != nil {
				t.Fatal(err)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the victim never ran: %v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rep := <-done
	if ctx.Err() != nil {
		t.Fatal("the tasks did not all run within 5 minutes: a GPU was not given back")
	}
	want := map[string]string{"sleep": scheduler.StateTimeout, "crash": scheduler.StateFailed, "cancel": scheduler.StateCancelled, "ok": scheduler.StateCompleted}
	byID := map[string]sweep.Cell{}
	for _, c := range m.Cells {
		byID[c.ID] = c
	}
	for _, c := range rep.Final {
		mode := byID[c.ID].Params["mode"]
		if c.State != want[mode] {
			t.Errorf("%s: %s, want %s", c.Name, c.State, want[mode])
		}
		if g := gpusOf(t, dir, c.ID); !strings.HasPrefix(g, "0,1|") {
			t.Errorf("%s: given %q, want both GPUs", c.Name, g)
		}
	}
}

// A task needing more GPUs than the pool has is refused at submit, naming
// the cell, its need and the pool; nothing is submitted.
func TestLocalGPUPoolRefusesTooBig(t *testing.T) {
	dir, _ := gpuSweep(t, `matrix: {engine: [vllm], topology: [g1, g3], geometry: [g], case: [TC-01], mode: [ok]}`)
	for _, pool := range [][]string{{"0"}, {}} {
		l := local.New(local.Config{Dir: dir, Parallel: 2, GPUs: pool})
		_, err := scheduler.Submit(context.Background(), dir, l, scheduler.SubmitOptions{})
		want := fmt.Sprintf("cell vllm-g3-g-mode-ok (%s) needs 3 GPUs; the local GPU pool has 1 (0)", cellID(t, dir, "vllm-g3-g-mode-ok"))
		if len(pool) == 0 { // the 1-GPU cell is refused first
			want = fmt.Sprintf("cell vllm-g1-g-mode-ok (%s) needs 1 GPU; the local GPU pool has 0", cellID(t, dir, "vllm-g1-g-mode-ok"))
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("pool %v: %v, want %q", pool, err, want)
		}
		if len(pool) == 0 && !strings.Contains(err.Error(), "(none: this machine has no GPU)") {
			t.Errorf("empty pool: %v", err)
		}
		recs, _ := sweep.ReadJournal(dir)
		if len(recs) != 0 {
			t.Errorf("pool %v: the refused sweep was partly submitted: %d journal records", pool, len(recs))
		}
	}
}

func cellID(t *testing.T, dir, name string) string {
	t.Helper()
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Cells {
		if c.Name == name {
			return c.ID
		}
	}
	t.Fatalf("no cell %s", name)
	return ""
}

func TestParseGPUs(t *testing.T) {
	for in, want := range map[string]string{"": "<nil>", "0,1,3": "[0 1 3]", "GPU-5f3a1c09-b2e4": "[GPU-5f3a1c09-b2e4]"} {
		got, err := local.ParseGPUs(in)
		if err != nil || fmt.Sprint(got) != want && !(want == "<nil>" && got == nil) {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"0,0": "listed twice", "0,-1": "is not a GPU id", "0;reboot": "is not a GPU id", "1,,2": "is not a GPU id"} {
		if _, err := local.ParseGPUs(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
