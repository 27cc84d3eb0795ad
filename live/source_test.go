package live

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
)

func init() { scheduler.Register("local", local.Open) }

func localLane(out, errw *bytes.Buffer) *lane.Lane {
	return &lane.Lane{Stdout: out, Stderr: errw, Submit: lane.SubmitOptions{Sched: &scheduler.Config{Name: "local"}}}
}

// The real source over a committed sweep: every cell's state as kvsweep
// status has it, the GPU use of the cell whose job wrote gpu.jsonl, the
// log tail of a cell without what would drive the terminal, its
// telemetry figures so far (the hits over the queries since the first
// scrape: 500 of 1000), and a link
// out of the sweep neither listed nor read.
func TestLaneSourceReadsTheSweep(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	const id = "7398c077bd4c"
	cell := filepath.Join(dir, "cells", id)
	var log strings.Builder
	for i := range 100 {
		log.WriteString("line " + strings.Repeat("x", i%7) + "\n")
	}
	log.WriteString("\x1b]0;owned\x07last line\n")
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(cell, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("slurm-1_0.out", log.String())
	write("gpu.jsonl", `{"t":1,"gpu":0,"v":{"utilization.gpu":40,"memory.used":1024,"memory.total":81920}}`+"\n"+
		`{"t":2,"gpu":0,"v":{"utilization.gpu":60,"memory.used":2048,"memory.total":81920}}`+"\n")
	write("telemetry.jsonl", `{"t": 1, "url": "http://127.0.0.1:8000/metrics", "values": {"vllm:prefix_cache_queries_total": 1000, "vllm:prefix_cache_hits_total": 100, "vllm:kv_cache_usage_perc": 0.25}}`+"\n"+
		`{"t": 2, "url": "http://127.0.0.1:8000/metrics", "values": {"vllm:prefix_cache_queries_total": 2000, "vllm:prefix_cache_hits_total": 600, "vllm:kv_cache_usage_perc": 0.5}}`+"\n")
	secret := filepath.Join(t.TempDir(), "secret.log")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(cell, "etcd.log")); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	src := newLaneSource(localLane(&out, &errw), []string{dir}, time.Second)
	snap := src.Poll(context.Background())
	if len(snap.Sweeps) != 1 || snap.Sweeps[0].Err != nil {
		t.Fatalf("poll: %+v", snap.Sweeps)
	}
	sw := snap.Sweeps[0]
	if got := scheduler.CountsLine(sw.Cells); got != "3 COMPLETED, 2 FAILED, 1 TIMEOUT" || sw.ID != "mixed-1" {
		t.Errorf("sweep %q: %s", sw.ID, got)
	}
	if got := gpuCell(sw.GPU, id); got != "1 GPU 50% 2.0 GiB" {
		t.Errorf("GPU column %q, want 1 GPU 50%% 2.0 GiB", got)
	}
	var c scheduler.CellStatus
	for _, x := range sw.Cells {
		if x.ID == id {
			c = x
		}
	}
	d := src.Detail(dir, c, "", 3)
	if d.Log != "cells/"+id+"/slurm-1_0.out" || len(d.Logs) != 1 {
		t.Errorf("logs %v (shown %q), want only the job output: a link out of the sweep is no log", d.Logs, d.Log)
	}
	m := NewModel(&fakeSource{}, time.Second)
	m.snap, m.polled, m.detail, m.width, m.height = snap, true, d, 100, 20
	v := m.View()
	if !strings.Contains(v, "\nline\nline x\nlast line\n") || strings.Contains(v, "\x1b]") || strings.Contains(v, "secret") {
		t.Errorf("the tail is not the last three lines, cleaned:\n%s", v)
	}
	if !strings.Contains(v, "telemetry: ") || !strings.Contains(v, "prefix_cache_hit_rate 0.5") || !strings.Contains(v, "kv_cache_usage_peak 0.5") {
		t.Errorf("the telemetry figures so far are not shown:\n%s", v)
	}
}

// Off a terminal the view prints the table kvsweep status prints.
func TestPlainWhenNotATerminal(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	var out, errw bytes.Buffer
	if err := (&Options{Interval: time.Second}).Run(localLane(&out, &errw), []string{dir}); err != nil {
		t.Fatal(err)
	}
	_, sc, err := localLane(&out, &errw).Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cells, _, err := scheduler.Status(context.Background(), dir, sc)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := scheduler.WriteStatus(&want, cells, "table"); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() || !strings.HasSuffix(out.String(), "6 cells: 3 COMPLETED, 2 FAILED, 1 TIMEOUT\n") {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want.String())
	}
	out.Reset()
	err = (&Options{Interval: time.Second}).Run(localLane(&out, &errw), []string{dir, filepath.Join(dir, "nothing")})
	if err == nil || !strings.Contains(errw.String(), "nothing") || !strings.Contains(out.String(), dir+"\n") {
		t.Errorf("a missing sweep beside one: %v\n%s\n%s", err, out.String(), errw.String())
	}
	if err := (&Options{Interval: time.Second}).Run(localLane(&out, &errw), nil); err == nil || !strings.Contains(err.Error(), "expected the sweep directory") {
		t.Errorf("no directory: %v", err)
	}
}
