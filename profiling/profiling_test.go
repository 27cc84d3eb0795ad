package profiling

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// engine is a vLLM server's profiler routes as v0.20.1 has them: present
// only with --profiler-config (else 404 {"detail":"Not Found"}), 200 with
// an empty body.
type engine struct {
	mu         sync.Mutex
	configured bool
	calls      []string
}

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var body struct {
		OutputDir string `json:"output_dir"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	e.calls = append(e.calls, r.Method+" "+r.URL.Path+" "+body.OutputDir)
	if !e.configured || r.Method != http.MethodPost || (r.URL.Path != "/start_profile" && r.URL.Path != "/stop_profile") {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail":"Not Found"}`))
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (e *engine) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// cell is a sweep directory whose manifest has plan, and a cell whose
// telemetry-endpoints lists the engine as worker 0 and another as 1.
func cell(t *testing.T, plan *sweep.ProfilePlan, engines ...string) Options {
	t.Helper()
	dir := t.TempDir()
	m, _ := json.Marshal(&sweep.Manifest{SchemaVersion: sweep.SchemaVersion, Name: "p", Profile: plan, Jobs: []sweep.Job{}, Cells: []sweep.Cell{}})
	if err := os.WriteFile(filepath.Join(dir, sweep.ManifestFile), m, 0o644); err != nil {
		t.Fatal(err)
	}
	cd := filepath.Join(dir, sweep.CellsDir, "c1")
	if err := os.MkdirAll(cd, 0o755); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i, u := range engines {
		lines = append(lines, u+"/metrics engine=vllm name="+string(rune('0'+i)))
	}
	if err := os.WriteFile(filepath.Join(cd, "telemetry-endpoints"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Options{SweepDir: dir, CellDir: cd, Poll: 10 * time.Millisecond}
}

// lines reads the cell's profile.jsonl.
func lines(t *testing.T, o Options) []Line {
	t.Helper()
	f, err := os.Open(filepath.Join(o.CellDir, sweep.ProfileLogFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// A profiled case's window: the profiled worker's engine is asked to
// start after the case's start line and to stop before its end line,
// with the case's folder as SGLang's output_dir; the worker not named is
// never asked; a case not profiled asks nothing.
func TestCaseWindow(t *testing.T) {
	e0, e1 := &engine{configured: true}, &engine{configured: true}
	s0, s1 := httptest.NewServer(e0), httptest.NewServer(e1)
	t.Cleanup(s0.Close)
	t.Cleanup(s1.Close)
	o := cell(t, &sweep.ProfilePlan{Tool: "torch", Cases: []string{"TC-01"}, Workers: []string{"0"}}, s0.URL, s1.URL)
	var marks []string
	mark := func(a []string, _ io.Writer) error { marks = append(marks, strings.Join(a, " ")); return nil }
	t.Setenv("KVSWEEP_SWEEP_DIR", o.SweepDir)
	t.Setenv("KVSWEEP_CELL_DIR", o.CellDir)
	for _, c := range []string{"TC-01", "TC-02"} {
		for _, ev := range []string{"start", "end"} {
			if err := Command([]string{ev, c}, io.Discard, mark); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join(o.CellDir, "profile", "torch", "TC-01", "0")
	if got, want := e0.seen(), []string{"POST /start_profile " + dir, "POST /stop_profile "}; !slices.Equal(got, want) {
		t.Errorf("worker 0's engine was asked %q, want %q", got, want)
	}
	if got := e1.seen(); len(got) != 0 {
		t.Errorf("worker 1 is not profiled, yet its engine was asked %q", got)
	}
	ls := lines(t, o)
	if len(ls) != 2 || ls[0].Event != "start" || !ls[0].OK || ls[0].Worker != "0" || ls[1].Event != "stop" || !ls[1].OK || ls[0].Case != "TC-01" {
		t.Errorf("profile.jsonl: %+v", ls)
	}
	if !slices.Equal(marks, []string{"start TC-01", "end TC-01", "start TC-02", "end TC-02"}) {
		t.Errorf("the case lines were written %q", marks)
	}
}

// An engine started without its profiler answers 404: the line says
// so, with what the engine needs, the case goes on, and its end asks
// nothing more.
func TestCaseWindowRefused(t *testing.T) {
	e := &engine{}
	s := httptest.NewServer(e)
	t.Cleanup(s.Close)
	o := cell(t, &sweep.ProfilePlan{Tool: "torch"}, s.URL)
	CaseStart(context.Background(), o, "TC-01")
	CaseEnd(context.Background(), o, "TC-01")
	ls := lines(t, o)
	if len(ls) != 1 || ls[0].OK || !strings.Contains(ls[0].Detail, "404") || !strings.Contains(ls[0].Detail, "--profiler-config") {
		t.Errorf("profile.jsonl: %+v", ls)
	}
}

// A delay opens the window later, beside the harness; a case that ends
// within the delay is never profiled, and says so; a duration closes
// the window before the case ends, and the end asks nothing more.
func TestCaseWindowDelayDuration(t *testing.T) {
	e := &engine{configured: true}
	s := httptest.NewServer(e)
	t.Cleanup(s.Close)
	o := cell(t, &sweep.ProfilePlan{Tool: "torch", DelayS: 1, DurationS: 1}, s.URL)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	o.Spawn = func(c string) error {
		wg.Add(1)
		go func() { defer wg.Done(); _ = Window(context.Background(), o, c) }()
		return nil
	}
	ctx := context.Background()
	// Ended within the delay.
	CaseStart(ctx, o, "TC-01")
	CaseEnd(ctx, o, "TC-01")
	wg.Wait()
	if got := e.seen(); len(got) != 0 {
		t.Errorf("a case that ended within the delay: the engine was asked %q", got)
	}
	if ls := lines(t, o); len(ls) != 1 || ls[0].Event != "skip" || !strings.Contains(ls[0].Detail, "within the profile's delay") {
		t.Errorf("profile.jsonl: %+v", ls)
	}
	// Opened after the delay and closed after the duration, while the case runs.
	CaseStart(ctx, o, "TC-02")
	wg.Wait()
	CaseEnd(ctx, o, "TC-02")
	if got, want := e.seen(), []string{"POST /start_profile " + filepath.Join(o.CellDir, "profile", "torch", "TC-02", "0"), "POST /stop_profile "}; !slices.Equal(got, want) {
		t.Errorf("the engine was asked %q, want %q", got, want)
	}
}

// nsys wraps the profiled workers only, with the window's switches, and
// a missing nsys leaves the worker as it was, saying why.
func TestWrapArgv(t *testing.T) {
	o := Options{CellDir: "/s/cells/c1"}
	found := func(string) (string, error) { return "/opt/nsys/bin/nsys", nil }
	missing := func(string) (string, error) {
		return "", errors.New(`exec: "nsys": executable file not found in $PATH`)
	}
	app := []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}
	for _, c := range []struct {
		name   string
		plan   *sweep.ProfilePlan
		worker string
		look   func(string) (string, error)
		want   string
		note   string
	}{
		{"delay", &sweep.ProfilePlan{Tool: "nsys", DelayS: 5, DurationS: 60}, "0", found,
			"/opt/nsys/bin/nsys profile -o /s/cells/c1/profile/0 --force-overwrite true --delay 5 --duration 60 python3 -m vllm.entrypoints.openai.api_server", ""},
		{"cases", &sweep.ProfilePlan{Tool: "nsys", Cases: []string{"TC-01"}, Workers: []string{"decode"}}, "decode", found,
			"/opt/nsys/bin/nsys profile -o /s/cells/c1/profile/decode --force-overwrite true --capture-range cudaProfilerApi --capture-range-end repeat python3 -m vllm.entrypoints.openai.api_server", ""},
		{"other worker", &sweep.ProfilePlan{Tool: "nsys", Workers: []string{"decode"}}, "prefill", found, strings.Join(app, " "), ""},
		{"torch", &sweep.ProfilePlan{Tool: "torch"}, "0", found, strings.Join(app, " "), ""},
		{"no plan", nil, "0", found, strings.Join(app, " "), ""},
		{"missing", &sweep.ProfilePlan{Tool: "nsys"}, "0", missing, strings.Join(app, " "), "nsys is not on the PATH"},
	} {
		argv, l := WrapArgv(o, c.plan, c.worker, app, c.look)
		if got := strings.Join(argv, " "); got != c.want {
			t.Errorf("%s: %s\nwant %s", c.name, got, c.want)
		}
		if (c.note == "") != (l.Event == "" || l.OK) || !strings.Contains(l.Detail, c.note) {
			t.Errorf("%s: line %+v, want a note %q", c.name, l, c.note)
		}
	}
	if err := Wrap(o, []string{"../0", "true"}); err == nil || !strings.Contains(err.Error(), "WORKER") {
		t.Errorf("a worker name with a path: %v", err)
	}
}
