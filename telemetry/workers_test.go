package telemetry

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// line is one scrape of url at t (ms) with its series, as the scraper
// writes it.
func line(t *testing.T, ms int64, url, role, name string, ss ...Series) string {
	t.Helper()
	b, err := json.Marshal(Sample{T: ms, URL: url, Role: role, Name: name, Series: ss})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func s(family string, v float64, labels ...string) Series {
	l := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	return Series{Family: family, Labels: l, Value: v}
}

func figureOf(figs []Figure, name string) (float64, bool) {
	for _, f := range figs {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

func rowOf(t *testing.T, sum Summary, cs, worker string) Worker {
	t.Helper()
	for _, w := range sum.Workers {
		if w.Case == cs && w.Worker == worker {
			return w
		}
	}
	t.Fatalf("no row %q %q in %+v", cs, worker, sum.Workers)
	return Worker{}
}

const (
	q, h   = "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"
	xq, xh = "vllm:external_prefix_cache_queries_total", "vllm:external_prefix_cache_hits_total"
	vu     = "vllm:kv_cache_usage_perc"
)

// Two data-parallel vLLM engines on one endpoint, two dp_ranks of a
// Dynamo worker, two TP schedulers of SGLang: each rank a worker, the
// gauges reduced per series and never summed (a usage of 1.3 and hit
// rates of 1.4 were what summing gave), the counters pooled.
func TestMultiSeries(t *testing.T) {
	u := "http://10.0.0.1:8000/metrics"
	lines := []string{
		line(t, 1000, u, "aggregated", "vllm", s(q, 0, "engine", "0"), s(h, 0, "engine", "0"), s(vu, 0.1, "engine", "0"),
			s(q, 0, "engine", "1"), s(h, 0, "engine", "1"), s(vu, 0.2, "engine", "1")),
		line(t, 2000, u, "aggregated", "vllm", s(q, 1000, "engine", "0"), s(h, 700, "engine", "0"), s(vu, 0.7, "engine", "0"),
			s(q, 3000, "engine", "1"), s(h, 600, "engine", "1"), s(vu, 0.6, "engine", "1")),
	}
	figs, sum := Derive([]byte(strings.Join(lines, "\n")))
	// engine 0: 700/1000 = 0.7, engine 1: 600/3000 = 0.2; the cell
	// (700+600)/(1000+3000) = 0.325; usage peaks 0.7 and 0.6, the cell 0.7.
	if w := rowOf(t, sum, "", "vllm dp=0"); w.Figures[HitRate] != 0.7 || w.Figures[UsagePeak] != 0.7 {
		t.Errorf("engine 0: %+v", w)
	}
	if w := rowOf(t, sum, "", "vllm dp=1"); w.Figures[HitRate] != 0.2 || w.Figures[UsagePeak] != 0.6 {
		t.Errorf("engine 1: %+v", w)
	}
	if v, _ := figureOf(figs, HitRate); v != 1300.0/4000 {
		t.Errorf("cell hit rate %v", v)
	}
	if v, _ := figureOf(figs, UsagePeak); v != 0.7 {
		t.Errorf("cell usage %v", v)
	}

	// Dynamo v1.2.0: dynamo_component_gpu_cache_usage_percent is 0-1 per
	// dp_rank: 0.7 and 0.6 give 0.7 (summed and "/100", 0.013).
	du := "dynamo_component_gpu_cache_usage_percent"
	d := line(t, 1000, "http://10.0.0.2:9090/metrics", "decode", "dyn", s(du, 0.7, "dp_rank", "0"), s(du, 0.6, "dp_rank", "1"))
	figs, sum = Derive([]byte(d))
	if v, _ := figureOf(figs, UsagePeak); v != 0.7 || len(sum.Workers) != 2 || sum.Workers[0].Catalog[0] != "dynamo-usage" {
		t.Errorf("Dynamo: %v %+v", figs, sum.Workers)
	}

	// SGLang, two TP schedulers: each cache_hit_rate 0.5 then 0 (a decode
	// log) then 0.3: the mean of the non-zero samples (0.5+0.3)/2 = 0.4
	// each, 0.4 for the cell (not 0.8); token_usage peaks 0.4 and 0.45.
	su, sh := "sglang:token_usage", "sglang:cache_hit_rate"
	var sl []string
	for i, v := range []float64{0.5, 0, 0.3} {
		sl = append(sl, line(t, int64(1000*(i+1)), "http://10.0.0.3:30000/metrics", "", "sg",
			s(sh, v, "tp_rank", "0", "model_name", "m"), s(sh, v, "tp_rank", "1", "model_name", "m"),
			s(su, 0.4*float64(i)/2, "tp_rank", "0"), s(su, 0.45*float64(i)/2, "tp_rank", "1")))
	}
	figs, sum = Derive([]byte(strings.Join(sl, "\n")))
	if v, _ := figureOf(figs, HitRate); math.Abs(v-0.4) > 1e-12 {
		t.Errorf("SGLang hit rate %v", v)
	}
	if v, _ := figureOf(figs, UsagePeak); v != 0.45 {
		t.Errorf("SGLang usage %v", v)
	}
	for _, w := range sum.Workers {
		for n, v := range w.Figures {
			if (n == HitRate || n == UsagePeak) && (v < 0 || v > 1) {
				t.Errorf("%s: %s = %v, out of 0-1", w.Worker, n, v)
			}
		}
	}
	if !strings.Contains(sum.Note, "sg tp=0: prefix_cache_hit_rate from the gauge sglang:cache_hit_rate (mean of its non-zero samples), not counters") {
		t.Errorf("SGLang note %q", sum.Note)
	}
}

// A vLLM worker with a KV connector: the external counters give the
// connector's hit rate beside the GPU-local one, and the tokens by
// source split the prompt.
func TestConnector(t *testing.T) {
	u, bs := "http://p0:8000/metrics", "vllm:prompt_tokens_by_source_total"
	lines := []string{
		line(t, 1, u, "prefill", "p0", s(q, 0), s(h, 0), s(xq, 0), s(xh, 0), s(bs, 0, "source", "local_compute"), s(bs, 0, "source", "external_kv_transfer")),
		line(t, 2, u, "prefill", "p0", s(q, 1000), s(h, 100), s(xq, 900), s(xh, 600), s(bs, 300, "source", "local_compute"), s(bs, 600, "source", "external_kv_transfer")),
	}
	figs, sum := Derive([]byte(strings.Join(lines, "\n")))
	// local 100/1000 = 0.1; the connector 600/900 = 2/3.
	if v, _ := figureOf(figs, HitRate); v != 0.1 {
		t.Errorf("local %v", v)
	}
	if v, _ := figureOf(figs, ConnectorRate); math.Abs(v-600.0/900) > 1e-12 {
		t.Errorf("connector %v", v)
	}
	w := rowOf(t, sum, "", "p0")
	if w.Role != "prefill" || w.Node != "p0" || w.Figures["prompt_tokens_external_kv_transfer"] != 600 || w.Figures["prompt_tokens_local_compute"] != 300 {
		t.Errorf("row %+v", w)
	}
}

// Two cases in one cell, each in its window: a counter's increase from
// the last sample at or before the start to the first at or after the
// end; gauges inside the window. Hostile lines of the windows file are
// skipped and counted; a case with no window gets no row.
func TestWindows(t *testing.T) {
	u := "http://127.0.0.1:8000/metrics"
	var ls []string
	// queries 1000 a second; hits 800 a second until t=10 s, then 200.
	qv, hv := 0.0, 0.0
	for sec := int64(0); sec <= 20; sec++ {
		ls = append(ls, line(t, sec*1000, u, "", "", s(q, qv), s(h, hv), s(vu, float64(sec)/40)))
		qv += 1000
		if sec < 10 {
			hv += 800
		} else {
			hv += 200
		}
	}
	windows := strings.Join([]string{
		`{"case":"TC-01","event":"start","t":500,"cache":"cold","steps":[]}`,
		`{"case":"TC-01","event":"end","t":9500}`,
		`{"case":"TC-02","event":"start","t":10000}`,
		`{"case":"TC-02","event":"end","t":20000}`,
		`not json`,
		`{"case":"TC-03","event":"end","t":1}`,
		`{"case":"` + strings.Repeat("x", 100) + `","event":"start","t":1}`,
		`{"case":"TC-04","event":"pause","t":1}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
	}, "\n")
	d := DeriveWindows([]byte(strings.Join(ls, "\n")), []byte(windows))
	// TC-01: the points inside it, t=1 to t=9 s: queries 8000, hits 6400:
	// 0.8. TC-02: t=10 to t=20: 10000 queries, 2000 hits: 0.2. Usage:
	// TC-01 inside 1..9 s, peak 9/40.
	if v, _ := figureOf(d.Cases["TC-01"], HitRate); v != 0.8 {
		t.Errorf("TC-01 %v", d.Cases["TC-01"])
	}
	if v, _ := figureOf(d.Cases["TC-02"], HitRate); v != 0.2 {
		t.Errorf("TC-02 %v", d.Cases["TC-02"])
	}
	if v, _ := figureOf(d.Cases["TC-01"], UsagePeak); v != 9.0/40 {
		t.Errorf("TC-01 usage %v", v)
	}
	if len(d.Summary.Workers) != 2 || rowOf(t, d.Summary, "TC-02", u).Figures[HitRate] != 0.2 {
		t.Errorf("rows %+v", d.Summary.Workers)
	}
	if !strings.Contains(d.Summary.Note, "figures per case window (2)") || !strings.Contains(d.Summary.Note, "5 lines of case-windows.jsonl skipped (first: case-windows.jsonl:5:2: not an event (expected {\"case\":ID,\"event\":\"start\"|\"end\",\"t\":UNIX_MS}): invalid character 'o' in literal null (expecting 'u'))") {
		t.Errorf("note %q", d.Summary.Note)
	}
	// A start with no end runs to the last sample: 10 s to 20 s.
	d = DeriveWindows([]byte(strings.Join(ls, "\n")), []byte(`{"case":"TC-02","event":"start","t":10000}`))
	if v, _ := figureOf(d.Cases["TC-02"], HitRate); v != 0.2 {
		t.Errorf("open window %v", d.Cases["TC-02"])
	}
}

// The endpoints file: a URL with role= and name= after it, a plain URL,
// and lines that are not endpoints.
func TestListedEndpoints(t *testing.T) {
	p := filepath.Join(t.TempDir(), "telemetry-endpoints")
	body := "http://n1:8000/metrics role=prefill name=prefill-0\nhttp://n2:8000/metrics\nnot a url\nftp://x/y role=decode\nhttp://n3:8001/metrics name=" + strings.Repeat("d", 100) + " role=decode junk\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Endpoints([]string{"http://127.0.0.1:8000/metrics"}, p)()
	want := []Endpoint{{URL: "http://127.0.0.1:8000/metrics"}, {URL: "http://n1:8000/metrics", Role: "prefill", Name: "prefill-0"},
		{URL: "http://n2:8000/metrics"}, {URL: "http://n3:8001/metrics", Role: "decode", Name: strings.Repeat("d", 64)}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// SGLang's counters before its gauge: sglang:cached_tokens_total appears
// only once a request had cached tokens (a new series counts from 0 at
// the scrape before), and the gauge beside them is not read.
func TestSGLangCounters(t *testing.T) {
	u, pt, ct, g := "http://s:30000/metrics", "sglang:prompt_tokens_total", "sglang:cached_tokens_total", "sglang:cache_hit_rate"
	lines := []string{
		line(t, 1, u, "", "", s(pt, 0, "model_name", "m"), s(g, 0, "model_name", "m", "tp_rank", "0")),
		line(t, 2, u, "", "", s(pt, 1000, "model_name", "m"), s(g, 0.9, "model_name", "m", "tp_rank", "0")),
		line(t, 3, u, "", "", s(pt, 2000, "model_name", "m"), s(ct, 500, "model_name", "m", "cache_source", "device"), s(g, 0.9, "model_name", "m", "tp_rank", "0")),
	}
	_, sum := Derive([]byte(strings.Join(lines, "\n")))
	// cached 0 (at t=2, before it appeared) -> 500, prompt 0 -> 2000: 0.25.
	w := rowOf(t, sum, "", u)
	if w.Figures[HitRate] != 0.25 || w.Figures["cached_tokens_device"] != 500 || w.Catalog[0] != "sglang-by-source" || w.Catalog[1] != "sglang-counters" {
		t.Errorf("row %+v", w)
	}
	if strings.Contains(sum.Note, "from the gauge") {
		t.Errorf("note %q", sum.Note)
	}
}

// A scrape keeps at most MaxSeries series of a family and the labels it
// names, each value cut at MaxLabelValue bytes; a value that is not
// finite is dropped.
func TestParseBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE vllm:kv_cache_usage_perc gauge\n")
	for i := range 100 {
		fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{engine=\"%d\",model_name=\"%s\",pod=\"x\"} 0.5\n", i, strings.Repeat("m", 100))
	}
	b.WriteString("# TYPE sglang:token_usage gauge\nsglang:token_usage NaN\nsglang:token_usage{tp_rank=\"1\"} +Inf\n")
	ss, err := Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != MaxSeries {
		t.Fatalf("%d series kept, want %d", len(ss), MaxSeries)
	}
	if l := ss[0].Labels; len(l) != 2 || len(l["model_name"]) != MaxLabelValue || l["engine"] != "0" {
		t.Errorf("labels %v", l)
	}
}

// Cases run back to back: a window reads only the scrapes inside it, so a
// cold case is never charged with the next case's hits, and a case whose
// end was never written ends where the next one starts.
func TestWindowsKeepToTheirCase(t *testing.T) {
	u := "http://127.0.0.1:8000/metrics"
	var ls []string
	// Scrapes at 0, 2, 5, 10 and 15 s; TC-01 (1 to 9 s) hits nothing,
	// TC-02 (9.001 to 15 s) hits 45 of 90 tokens by 10 s and 200 of 260 by
	// 15 s.
	for _, p := range []struct {
		t    int64
		h, q float64
	}{{0, 0, 0}, {2000, 0, 20}, {5000, 0, 60}, {10000, 45, 150}, {15000, 200, 320}} {
		ls = append(ls, line(t, p.t, u, "", "", s(q, p.q), s(h, p.h)))
	}
	series := []byte(strings.Join(ls, "\n"))
	d := DeriveWindows(series, []byte(`{"case":"TC-01","event":"start","t":1000}
{"case":"TC-01","event":"end","t":9000}
{"case":"TC-02","event":"start","t":9001}
{"case":"TC-02","event":"end","t":15000}`))
	// TC-01 reads its own scrapes (2 and 5 s): 0, never the 0.3 that the
	// scrapes around it (0 and 10 s) would give with TC-02's hits.
	if v, ok := figureOf(d.Cases["TC-01"], HitRate); !ok || v != 0 {
		t.Errorf("TC-01 hit rate %v (%v), want 0", v, ok)
	}
	// A window with one scrape inside has nothing to take an increase
	// over: no figure.
	short := DeriveWindows(series, []byte(`{"case":"TC-01","event":"start","t":3000}
{"case":"TC-01","event":"end","t":9000}`))
	if v, ok := figureOf(short.Cases["TC-01"], HitRate); ok {
		t.Errorf("a window with one scrape: hit rate %v", v)
	}
	// TC-02: 10 s to 15 s: hits 155 of 170 queries.
	if v, _ := figureOf(d.Cases["TC-02"], HitRate); math.Abs(v-155.0/170) > 1e-12 {
		t.Errorf("TC-02 hit rate %v, want 155/170", v)
	}
	// TC-01 never ended: its window stops where TC-02 starts.
	open := DeriveWindows(series, []byte(`{"case":"TC-01","event":"start","t":1000}
{"case":"TC-02","event":"start","t":9001}
{"case":"TC-02","event":"end","t":15000}`))
	if v, ok := figureOf(open.Cases["TC-01"], HitRate); !ok || v != 0 {
		t.Errorf("the unended TC-01: hit rate %v (%v), want 0 from its own scrapes (2 and 5 s)", v, ok)
	}
}

// Behind a router that serves several workers on one endpoint (SGLang's
// smg: worker_addr), each worker is its own: their counters are never
// read as one series going back and forth.
func TestWorkersBehindARouter(t *testing.T) {
	u := "http://127.0.0.1:30000/metrics"
	ct, pt := "sglang_cached_tokens_total", "sglang_prompt_tokens_total"
	a, b := []string{"worker_addr", "grpc://10.0.0.1:8001", "tp_rank", "0"}, []string{"worker_addr", "grpc://10.0.0.2:8001", "tp_rank", "0"}
	series := []byte(line(t, 1000, u, "", "", s(ct, 1000, a...), s(pt, 2000, a...), s(ct, 10, b...), s(pt, 20, b...)) + "\n" +
		line(t, 2000, u, "", "", s(ct, 1000, a...), s(pt, 2100, a...), s(ct, 10, b...), s(pt, 120, b...)))
	d := DeriveWindows(series, nil)
	// Neither worker hit anything in between: 0 of 200 prompt tokens.
	if v, ok := figureOf(d.Cell, HitRate); !ok || v != 0 {
		t.Errorf("the cell's hit rate %v (%v), want 0", v, ok)
	}
	workers := map[string]bool{}
	for _, w := range d.Summary.Workers {
		workers[w.Worker] = true
	}
	if len(workers) != 2 {
		t.Errorf("workers %+v, want one a worker_addr", d.Summary.Workers)
	}
}

// vLLM V0's hit-rate gauge is kept since the engine started: it gives
// the whole cell's figure, never a case window's.
func TestCumulativeGaugeOnlyOverTheCell(t *testing.T) {
	u := "http://127.0.0.1:8000/metrics"
	g := "vllm:gpu_prefix_cache_hit_rate"
	series := []byte(line(t, 1000, u, "", "", s(g, 0.6)) + "\n" + line(t, 2000, u, "", "", s(g, 0.7)))
	if v, ok := figureOf(DeriveWindows(series, nil).Cell, HitRate); !ok || v != 0.7 {
		t.Errorf("over the cell: %v (%v), want the last sample, 0.7", v, ok)
	}
	d := DeriveWindows(series, []byte(`{"case":"TC-01","event":"start","t":500}
{"case":"TC-01","event":"end","t":2500}`))
	if v, ok := figureOf(d.Cases["TC-01"], HitRate); ok {
		t.Errorf("a window's hit rate %v from a gauge kept since start", v)
	}
}
