package cachectl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// cell is a sweep directory whose manifest carries plan, and one cell.
func cell(t *testing.T, plan *sweep.CachePlan, endpoints ...string) Options {
	t.Helper()
	dir := t.TempDir()
	m := sweep.Manifest{SchemaVersion: sweep.SchemaVersion, Cache: plan}
	if endpoints != nil {
		m.Telemetry = &sweep.Telemetry{Endpoints: endpoints, IntervalS: 1}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sweep.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cd := filepath.Join(dir, sweep.CellsDir, "c1")
	if err := os.MkdirAll(cd, 0o755); err != nil {
		t.Fatal(err)
	}
	return Options{SweepDir: dir, CellDir: cd, RequestTimeout: 5 * time.Second, IdleWait: 20 * time.Second, Poll: 10 * time.Millisecond}
}

func coldPlan() *sweep.CachePlan {
	return &sweep.CachePlan{Reset: true, MaxColdHitRate: 0.01, Cases: map[string]sweep.CaseCache{
		"TC-01": {State: sweep.CacheWarm}, "TC-02": {State: sweep.CacheCold}}}
}

// engine is an httptest server with a vLLM's or SGLang's /metrics; reset
// answers its reset route.
type engine struct {
	*httptest.Server
	busy   atomic.Int32 // running requests the metrics report
	resets atomic.Int32
}

func newEngine(t *testing.T, kind string, reset http.HandlerFunc) *engine {
	e := &engine{}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		n := e.busy.Load()
		if n > 0 {
			e.busy.Add(-1) // idle after that many scrapes
		}
		switch kind {
		case VLLM:
			fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\",engine=\"0\"} %d\nvllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 0\nvllm:external_prefix_cache_queries_total{model_name=\"m\",engine=\"0\"} 0\n", n)
		case SGLang:
			fmt.Fprintf(w, "sglang:num_running_reqs{tp_rank=\"0\"} 0\nsglang:num_queue_reqs{tp_rank=\"0\"} %d\n", n)
		case Dynamo:
			fmt.Fprintf(w, "dynamo_component_gpu_cache_usage_percent{dp_rank=\"0\"} 0.1\nvllm:num_requests_running 0\n")
		default:
			fmt.Fprintln(w, "process_cpu_seconds_total 1")
		}
	})
	count := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		e.resets.Add(1)
		reset(w, r)
	}
	mux.HandleFunc("/reset_prefix_cache", count)
	mux.HandleFunc("/flush_cache", count)
	e.Server = httptest.NewServer(mux)
	t.Cleanup(e.Close)
	return e
}

func ok200(w http.ResponseWriter, r *http.Request) {}

func startLine(t *testing.T, o Options, id string) Line {
	t.Helper()
	var out bytes.Buffer
	if err := Mark(context.Background(), o, "start", id, &out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(o.CellDir, sweep.CaseWindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var l Line
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &l); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.String()) != lines[len(lines)-1] {
		t.Errorf("printed %q, wrote %q", out.String(), lines[len(lines)-1])
	}
	return l
}

// A cold case resets each engine once it is idle (a vLLM, an SGLang listed
// by the harness), and the start line says so; a warm case resets
// nothing; the end line follows.
func TestColdResetsEachEngine(t *testing.T) {
	v := newEngine(t, VLLM, ok200)
	s := newEngine(t, SGLang, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "Cache flushed.") })
	v.busy.Store(3)
	s.busy.Store(2)
	o := cell(t, coldPlan(), v.URL+"/metrics")
	writeEndpoints(t, o, s.URL+"/metrics role=decode name=decode-0\n")
	if l := startLine(t, o, "TC-01"); l.Cache != "warm" || len(l.Steps) != 0 || l.Error != "" || v.resets.Load() != 0 {
		t.Fatalf("warm case: %+v, %d resets", l, v.resets.Load())
	}
	before := time.Now().UnixMilli()
	l := startLine(t, o, "TC-02")
	if l.Cache != "cold" || l.Error != "" || len(l.Steps) != 2 || l.T < before {
		t.Fatalf("cold case: %+v", l)
	}
	for i, want := range []string{v.URL + "/reset_prefix_cache", s.URL + "/flush_cache"} {
		st := l.Steps[i]
		if !st.OK || st.What != "reset" || st.Target != want || !strings.Contains(st.Detail, "idle before the reset") {
			t.Errorf("step %d: %+v, want an ok reset of %s", i, st, want)
		}
	}
	if !strings.Contains(l.Steps[1].Detail, "Cache flushed.") || v.resets.Load() != 1 || s.resets.Load() != 1 || v.busy.Load() != 0 || s.busy.Load() != 0 {
		t.Errorf("%+v; resets %d %d", l.Steps, v.resets.Load(), s.resets.Load())
	}
	var out bytes.Buffer
	if err := Mark(context.Background(), o, "end", "TC-02", &out); err != nil || !strings.Contains(out.String(), `"event":"end"`) {
		t.Errorf("end: %v %s", err, out.String())
	}
}

func writeEndpoints(t *testing.T, o Options, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(o.CellDir, EndpointsFile), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every way a reset fails is a failed step and the line's error: vLLM
// without VLLM_SERVER_DEV_MODE (404), a 500, SGLang's 400 with its
// message, an engine that stays busy (the reset is not sent), one that
// does not answer in time, one that is not there, and Dynamo, which has
// no reset route.
func TestResetFailures(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	cases := []struct {
		name, kind string
		reset      http.HandlerFunc
		busy       int32
		want       string
	}{
		{"404", VLLM, http.NotFound, 0, "VLLM_SERVER_DEV_MODE=1"},
		{"500", VLLM, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }, 0, "500 Internal Server Error: boom"},
		{"400", SGLang, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Cache not flushed because there are pending requests", 400)
		}, 0, "SGLang refused the flush: Cache not flushed because there are pending requests"},
		{"busy", VLLM, ok200, 1 << 20, "still busy after"},
		{"timeout", SGLang, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}, 0, "Timeout"},
		{"dynamo", Dynamo, ok200, 0, "Dynamo v1.2.0 has no HTTP route"},
		{"unknown", "", ok200, 0, "no vllm:, sglang: or dynamo_ families"},
		{"redirect", VLLM, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:9/", http.StatusTemporaryRedirect)
		}, 0, "307 Temporary Redirect"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(t, c.kind, c.reset)
			e.busy.Store(c.busy)
			o := cell(t, coldPlan(), e.URL+"/metrics")
			o.IdleWait, o.RequestTimeout = 300*time.Millisecond, 300*time.Millisecond
			l := startLine(t, o, "TC-02")
			if len(l.Steps) != 1 || l.Steps[0].OK || !strings.Contains(l.Steps[0].Detail, c.want) || !strings.Contains(l.Error, c.want) {
				t.Fatalf("%+v, want a failed step saying %q", l, c.want)
			}
			if c.name == "busy" && e.resets.Load() != 0 {
				t.Errorf("a busy engine was reset")
			}
		})
	}
	t.Run("dead", func(t *testing.T) {
		o := cell(t, coldPlan(), "http://127.0.0.1:9/metrics")
		if l := startLine(t, o, "TC-02"); len(l.Steps) != 1 || l.Steps[0].OK || !strings.Contains(l.Error, "could not read its metrics") {
			t.Fatalf("%+v", l)
		}
	})
}

// A listed line's reset= and engine= are used as given; a vLLM that
// counts a connector's hits is reset with reset_external=true.
func TestListedAttributes(t *testing.T) {
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.String())
		mu.Unlock()
		if r.Method == http.MethodGet {
			fmt.Fprintln(w, "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\nvllm:external_prefix_cache_queries_total{engine=\"0\"} 120")
		}
	}))
	t.Cleanup(srv.Close)
	// A Dynamo worker's system port passes vLLM's families through; its
	// line's reset= names the engine's own server, which is reset.
	dyn := newEngine(t, Dynamo, ok200)
	o := cell(t, coldPlan())
	writeEndpoints(t, o, "# the servers\n"+srv.URL+"/metrics engine=vllm reset="+srv.URL+"/admin/reset\n\n"+srv.URL+"/m2\n"+dyn.URL+"/metrics reset="+dyn.URL+"/reset_prefix_cache\n")
	l := startLine(t, o, "TC-02")
	if len(l.Steps) != 3 || !l.Steps[0].OK || l.Steps[0].Target != srv.URL+"/admin/reset?reset_external=true" || l.Steps[1].Target != srv.URL+"/reset_prefix_cache?reset_external=true" {
		t.Fatalf("%+v\n%v", l.Steps, got)
	}
	if !strings.Contains(l.Steps[0].Detail, "cache.tier_reset") || !l.Steps[2].OK || dyn.resets.Load() != 1 {
		t.Errorf("%+v", l.Steps)
	}
}

// A hostile endpoints file is refused (too big, a link out of the cell,
// a FIFO), and a bad line is a failed step naming file and line, the
// value and what was expected; none stop the other engines' resets.
func TestHostileEndpoints(t *testing.T) {
	e := newEngine(t, VLLM, ok200)
	for name, setup := range map[string]func(o Options) string{
		"huge": func(o Options) string {
			writeEndpoints(t, o, strings.Repeat(e.URL+"/metrics\n", 4000))
			return "refused"
		},
		"link": func(o Options) string {
			secret := filepath.Join(t.TempDir(), "secret")
			os.WriteFile(secret, []byte(e.URL+"/metrics\n"), 0o644)
			os.Symlink(secret, filepath.Join(o.CellDir, EndpointsFile))
			return "refused"
		},
		"bad line": func(o Options) string {
			writeEndpoints(t, o, "ftp://x/metrics\n"+e.URL+"/metrics engine=trt\n")
			return `telemetry-endpoints:1 failed: "ftp://x/metrics" is not an endpoint (expected an http:// or https:// URL)`
		},
	} {
		t.Run(name, func(t *testing.T) {
			o := cell(t, coldPlan(), e.URL+"/metrics")
			want := setup(o)
			l := startLine(t, o, "TC-02")
			if len(l.Steps) < 2 || l.Steps[0].OK || l.Steps[0].What != "endpoints" || !strings.Contains(l.Error, want) {
				t.Fatalf("%+v, want a refused endpoints step saying %q", l, want)
			}
			if last := l.Steps[len(l.Steps)-1]; !last.OK || last.Target != e.URL+"/reset_prefix_cache" {
				t.Errorf("the spec's engine was not reset: %+v", last)
			}
		})
	}
}

// The tier's reset runs after the engines', in the cell directory, its
// output kept; a failing or hanging one is a failed step. A primed case
// runs its priming step; cache.reset false resets nothing.
func TestCommands(t *testing.T) {
	e := newEngine(t, VLLM, ok200)
	plan := coldPlan()
	plan.TierReset = []string{"sh", "-c", `echo flushed "$1" in "$(basename "$PWD")"`, "sh", "--all"}
	plan.Cases["TC-03"] = sweep.CaseCache{State: sweep.CachePrimed, Prime: []string{"sh", "-c", "echo priming >&2; exit 3"}}
	o := cell(t, plan, e.URL+"/metrics")
	l := startLine(t, o, "TC-02")
	if len(l.Steps) != 2 || !l.Steps[1].OK || l.Steps[1].What != "tier_reset" || l.Steps[1].Detail != "exit 0: flushed --all in c1" {
		t.Fatalf("%+v", l.Steps)
	}
	l = startLine(t, o, "TC-03")
	if l.Cache != "primed" || len(l.Steps) != 1 || l.Steps[0].OK || l.Steps[0].Detail != "exit status 3: priming" {
		t.Fatalf("%+v", l)
	}
	plan.TierReset = []string{"sleep", "30"}
	o = cell(t, plan, e.URL+"/metrics")
	o.CommandTimeout = 200 * time.Millisecond
	if l = startLine(t, o, "TC-02"); l.Steps[1].OK || !strings.Contains(l.Steps[1].Detail, "killed after 200ms") {
		t.Fatalf("%+v", l.Steps)
	}
	plan.Reset = false
	o = cell(t, plan, e.URL+"/metrics")
	if l = startLine(t, o, "TC-02"); l.Cache != "cold" || len(l.Steps) != 0 || e.resets.Load() != 2 {
		t.Fatalf("reset false: %+v, %d resets", l, e.resets.Load())
	}
}

// Outside a job, or without a case, it is a usage error; a manifest it
// cannot read is the line's error; a case-windows file that is a link is
// refused.
func TestUsageAndBadCells(t *testing.T) {
	t.Setenv("KVSWEEP_CELL_DIR", "")
	t.Setenv("KVSWEEP_CELL_ID", "")
	var ue *fail.UsageError
	if err := Command([]string{"start", "TC-01"}, &bytes.Buffer{}); !errors.As(err, &ue) {
		t.Errorf("outside a job: %v", err)
	}
	o := cell(t, coldPlan())
	t.Setenv("KVSWEEP_CELL_DIR", o.CellDir)
	// A case id the windows' reader would skip is refused here.
	for _, args := range [][]string{{"start"}, {"begin", "TC-01"}, {"start", "a\nb"}, {"start", "TC 01"}, {"end", strings.Repeat("x", 65)}} {
		if err := Command(args, &bytes.Buffer{}); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	os.Remove(filepath.Join(o.SweepDir, sweep.ManifestFile))
	if l := startLine(t, o, "TC-02"); !strings.Contains(l.Error, "the cache state of TC-02 is unknown") {
		t.Errorf("%+v", l)
	}
	o = cell(t, coldPlan())
	os.Symlink("/dev/null", filepath.Join(o.CellDir, sweep.CaseWindowsFile))
	if err := Mark(context.Background(), o, "end", "TC-01", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a linked case-windows file: %v", err)
	}
}
