package gpustat

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// standin is the stand-in nvidia-smi the e2e tests put on the job's PATH.
func standin(t *testing.T) string {
	p, err := filepath.Abs("../e2e/testdata/nvidia-smi/nvidia-smi")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseRow(t *testing.T) {
	s, err := ParseRow("3, GPU-5d1c6f5a-aaaa, 312.45, 97, 41, 70123, 81559, 1980, 2619, 67", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"power.draw": 312.45, "utilization.gpu": 97, "utilization.memory": 41, "memory.used": 70123,
		"memory.total": 81559, "clocks.current.sm": 1980, "clocks.current.memory": 2619, "temperature.gpu": 67}
	if s.GPU != 3 || s.UUID != "GPU-5d1c6f5a-aaaa" || len(s.Values) != len(want) {
		t.Fatalf("%+v", s)
	}
	for k, v := range want {
		if s.Values[k] != v {
			t.Errorf("%s = %v, want %v", k, s.Values[k], v)
		}
	}
	// What a GPU does not report is left out, never 0.
	s, err = ParseRow("0, [N/A], [N/A], [Not Supported], N/A, 4, 81559, [Unknown Error], 2619, [GPU is lost]", 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.UUID != "" || len(s.Values) != 3 || s.Values["memory.used"] != 4 {
		t.Errorf("unreported values: %+v", s)
	}
}

func TestParseRowHostile(t *testing.T) {
	for _, c := range []struct{ row, want string }{
		{"0, GPU-a, 1, 2", `nvidia-smi:7:1: "0, GPU-a, 1, 2" has 4 fields (expected 10: index,uuid,`},
		{"x, GPU-a, 1, 2, 3, 4, 5, 6, 7, 8", `nvidia-smi:7:1: index: "x" is not a GPU index (expected 0 to 1023)`},
		{"0, GPU-a, lots, 2, 3, 4, 5, 6, 7, 8", `nvidia-smi:7:11: power.draw: "lots" is not a number of watts (expected 0 to 1e+07, or [N/A] / [Not Supported])`},
		{"0, GPU-a, 1, -2, 3, 4, 5, 6, 7, 8", `nvidia-smi:7:14: utilization.gpu: "-2" is not a number of percent`},
		{"0, GPU-a, 1, 2, 3, NaN, 5, 6, 7, 8", `memory.used: "NaN" is not a number of MiB`},
		{"0, GPU-a, 1, 2, 3, 4, 5, 6, 7, 1e99", `temperature.gpu: "1e99" is not a number of degrees C`},
		{`0, GPU"a, 1, 2, 3, 4, 5, 6, 7, 8`, `uuid: "GPU\"a" is not a GPU UUID`},
		{"0, , 1, 2, 3, 4, 5, 6, 7, 8", `nvidia-smi:7:4: uuid: "" is not a GPU UUID`},
		{"2048, GPU-a, 1, 2, 3, 4, 5, 6, 7, 8", `index: "2048" is not a GPU index`},
		{strings.Repeat("9", MaxLine+1), "a row of 1025 bytes (expected at most 1024)"},
		{"Unable to determine the device handle for GPU0000:41:00.0: Unknown Error", "has 1 fields"},
	} {
		_, err := ParseRow(c.row, 7)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: %v, want %q", c.row, err, c.want)
		}
	}
}

// syncBuf is a buffer a test reads while the sampler writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) Bytes() []byte               { s.mu.Lock(); defer s.mu.Unlock(); return bytes.Clone(s.b.Bytes()) }

func TestSamplerStandin(t *testing.T) {
	t.Setenv("STANDIN_SMI_TICKS", "5")
	var out syncBuf
	s := &Sampler{SMI: standin(t), Interval: 100 * time.Millisecond, W: &out}
	if err := s.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	sum := Summarize(out.Bytes())
	if sum.Samples != 10 || sum.Failed != 0 || sum.Note != "" || len(sum.GPUs) != 2 {
		t.Fatalf("%+v\n%s", sum, out.Bytes())
	}
	g0, g1 := sum.GPUs[0], sum.GPUs[1]
	if g0.Index != 0 || g0.UUID != "GPU-00000000-1111-2222-3333-444444444444" || g0.Samples != 5 {
		t.Errorf("GPU 0: %+v", g0)
	}
	for name, c := range map[string]struct {
		got  *Stat
		want Stat
	}{
		"power": {g0.PowerW, Stat{120.5, 100.5, 140.5}}, "util": {g0.UtilPct, Stat{66, 50, 90}}, "mem util": {g0.MemUtilPct, Stat{24, 20, 30}},
		"mem used": {g0.MemUsedMiB, Stat{1080, 1000, 1200}}, "sm clock": {g0.SMClockMHz, Stat{1824, 1200, 1980}}, "temp": {g0.TempC, Stat{42, 40, 44}},
	} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("GPU 0 %s: %+v, want %+v", name, c.got, c.want)
		}
	}
	if g0.MemTotalMiB != 81559 {
		t.Errorf("GPU 0 memory total %v", g0.MemTotalMiB)
	}
	if g1.PowerW != nil || g1.MemUtilPct != nil || g1.UtilPct == nil || g1.UtilPct.Max != 0 || g1.SMClockMHz.Min != 345 {
		t.Errorf("GPU 1 (no power, no memory utilisation): %+v", g1)
	}
}

// A sampler stopped (the job ends) stops nvidia-smi and returns.
func TestSamplerStops(t *testing.T) {
	var out syncBuf
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&Sampler{SMI: standin(t), Interval: 100 * time.Millisecond, W: &out}).Run(ctx) }()
	t.Cleanup(cancel)
	deadline := time.Now().Add(time.Minute)
	for bytes.Count(out.Bytes(), []byte("\n")) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("no rows in a minute: %s", out.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the sampler did not stop")
	}
	if sum := Summarize(out.Bytes()); sum.Samples < 4 || sum.Note != "" {
		t.Errorf("%+v", sum)
	}
}

// No nvidia-smi, or one that refuses: a note, and no error.
func TestSamplerNotes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "nvidia-smi")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho 'Field \"clocks.current.sm\" is not a valid field to query.' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hostile := filepath.Join(dir, "hostile")
	if err := os.WriteFile(hostile, []byte("#!/bin/sh\necho 'No devices were found'\nhead -c 3000 /dev/zero | tr '\\0' x; echo\necho '0, GPU-a, 1, 2, 3, 4, 5, 6, 7, 8'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ smi, want string }{
		{filepath.Join(dir, "none", "nvidia-smi"), "no GPU samples: " + filepath.Join(dir, "none", "nvidia-smi") + " is not on this node"},
		{bad, `ended: exit status 2 Field "clocks.current.sm" is not a valid field to query.`},
		{hostile, `nvidia-smi:2:1: a row over 1024 bytes`},
	} {
		var out syncBuf
		if err := (&Sampler{SMI: c.smi, Interval: time.Second, W: &out}).Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		if sum := Summarize(out.Bytes()); !strings.Contains(sum.Note, c.want) || sum.Failed != 0 {
			t.Errorf("%s: %+v, want a note %q\n%s", c.smi, sum, c.want, out.Bytes())
		}
	}
}

func TestSummarizeHostile(t *testing.T) {
	in := strings.Join([]string{
		`{"t":1,"gpu":0,"v":{"power.draw":100}}`,
		`{"t":1,"gpu":1,"v":{"power.draw":50}}`,
		`{"t":2,"gpu":0,"v":{"power.draw":300}}`,
		`not json`,
		`{"t":3,"gpu":0,"v":{"power.draw":"hot"}}`,
		`{"t":3,"gpu":-7}`,
		`{"t":3,"gpu":-1}`,
		`{"t":4,"gpu":0,"v":{}}`,
		`{"t":5,"gpu":0}`,
	}, "\n")
	sum := Summarize([]byte(in))
	if sum.Samples != 5 || sum.Failed != 4 || len(sum.GPUs) != 2 {
		t.Fatalf("%+v", sum)
	}
	if !strings.Contains(sum.Note, `gpu.jsonl:4: "not json" is not a sample`) || !strings.Contains(sum.Note, "GPU 1 has 1 samples of 4") {
		t.Errorf("note %q", sum.Note)
	}
	if p := sum.GPUs[0].PowerW; p == nil || *p != (Stat{200, 100, 300}) {
		t.Errorf("GPU 0 power %+v", p)
	}
	if sum := Summarize(nil); sum.Note != "no sample" || sum.GPUs != nil {
		t.Errorf("empty: %+v", sum)
	}
}

func TestCommand(t *testing.T) {
	got := strings.Join(Command("nvidia-smi", 2*time.Second), " ")
	want := "nvidia-smi --query-gpu=index,uuid,power.draw,utilization.gpu,utilization.memory,memory.used,memory.total,clocks.current.sm,clocks.current.memory,temperature.gpu --format=csv,noheader,nounits -lms 2000"
	if got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}
