package telemetry

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// vLLM's exposition text as v0.11 writes it (two engines, labels,
// histograms, the process's own families): each series of the kept
// families with its rank and model labels, the rest dropped.
func TestParse(t *testing.T) {
	b, err := os.ReadFile("testdata/vllm-0.11.metrics")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range got {
		lines = append(lines, fmt.Sprintf("%s{engine=%s} %v", s.Family, s.Labels["engine"], s.Value))
	}
	want := []string{"vllm:prefix_cache_hits_total{engine=0} 2048", "vllm:prefix_cache_hits_total{engine=1} 512",
		"vllm:prefix_cache_queries_total{engine=0} 4096", "vllm:prefix_cache_queries_total{engine=1} 1024",
		"vllm:kv_cache_usage_perc{engine=0} 0.0625", "vllm:num_preemptions_total{engine=0} 1"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if m := got[0].Labels["model_name"]; m != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("model_name %q", m)
	}
	if _, err := Parse(strings.NewReader("vllm:kv_cache_usage_perc{engine=\"0\" 1\n")); err == nil {
		t.Error("a broken exposition text parsed")
	}
}

func sample(t int64, url int, v map[string]float64) string {
	return fmt.Sprintf(`{"t": %d, "url": "http://127.0.0.1:%d/metrics", "values": %s}`, t, 8000+url, values(v))
}

func values(v map[string]float64) string {
	var parts []string
	for k, x := range v {
		parts = append(parts, fmt.Sprintf("%q: %v", k, x))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Lines an older kvsweep wrote ("values", each family summed over its
// series) derive as before: vLLM's counters as increases (an engine that
// restarted counts from its new start), the peak usage, SGLang's gauge
// as the mean of its (non-zero) samples; a dead endpoint counted, never
// an error.
func TestDerive(t *testing.T) {
	q, h, u, p := "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total"
	lines := []string{
		sample(1, 0, map[string]float64{q: 1000, h: 900, u: 0.1, p: 0}), // before the run's traffic
		sample(2, 0, map[string]float64{q: 2000, h: 1400, u: 0.5, p: 2}),
		sample(3, 0, map[string]float64{q: 500, h: 100, u: 0.3, p: 0}), // restarted
		`{"t": 4, "url": "http://127.0.0.1:9/metrics", "error": "Get \"http://127.0.0.1:9/metrics\": connection refused"}`,
		`not json`,
	}
	figs, sum := Derive([]byte(strings.Join(lines, "\n")))
	got := map[string]float64{}
	for _, f := range figs {
		got[f.Name] = f.Value
	}
	// queries rose 1000 then 500 from the restart; hits 500 then 100.
	if math.Abs(got["prefix_cache_hit_rate"]-600.0/1500) > 1e-12 || got["kv_cache_usage_peak"] != 0.5 || got["preemptions"] != 2 {
		t.Errorf("figures %v", got)
	}
	if sum.Samples != 3 || sum.Failed != 2 || !strings.Contains(sum.Note, "connection refused") {
		t.Errorf("summary %+v", sum)
	}
	figs, _ = Derive([]byte(sample(1, 0, map[string]float64{"sglang:cache_hit_rate": 0.5, "sglang:token_usage": 0.2}) + "\n" +
		sample(2, 0, map[string]float64{"sglang:cache_hit_rate": 0.7, "sglang:token_usage": 0.4})))
	if len(figs) != 2 || figs[0].Name != "kv_cache_usage_peak" || figs[0].Value != 0.4 || math.Abs(figs[1].Value-0.6) > 1e-12 {
		t.Errorf("SGLang: %+v", figs)
	}
	if figs, sum := Derive(nil); len(figs) != 0 || sum.Note != "no sample" {
		t.Errorf("nothing scraped: %+v %+v", figs, sum)
	}
}

// Scraping a real HTTP server whose counters move, and one that is not
// there: every interval a line per endpoint, until the context ends.
func TestScrape(t *testing.T) {
	var mu sync.Mutex
	queries, hits := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries, hits = queries+100, hits+25
		fmt.Fprintf(w, "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{engine=\"0\"} %d\n# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{engine=\"0\"} %d\n", queries, hits)
		mu.Unlock()
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	var out strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Scrape(ctx, func() []Endpoint { return []Endpoint{{URL: srv.URL, Role: "decode", Name: "d0"}, {URL: dead.URL}} }, 10*time.Millisecond, &out)
	}()
	for {
		mu.Lock()
		n := queries
		mu.Unlock()
		if n >= 300 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	figs, sum := Derive([]byte(out.String()))
	if len(figs) == 0 || figs[0].Name != "preemptions" && figs[len(figs)-1].Name != "prefix_cache_hit_rate" {
		t.Fatalf("figures %+v from\n%s", figs, out.String())
	}
	for _, f := range figs {
		if f.Name == "prefix_cache_hit_rate" && f.Value != 0.25 {
			t.Errorf("hit rate %v, want 0.25", f.Value)
		}
	}
	if sum.Samples < 2 || sum.Failed < 1 || len(sum.Workers) != 1 || sum.Workers[0].Worker != "d0" || sum.Workers[0].Role != "decode" || sum.Workers[0].Node != "127.0.0.1" {
		t.Errorf("summary %+v", sum)
	}
}

// A line nested past 64 levels (the harness can write the file too) is
// counted as failed without being decoded.
func TestDeriveDeepLine(t *testing.T) {
	deep := `{"t": 9, "url": "u", "values": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"
	_, sum := Derive([]byte(sample(1, 0, map[string]float64{"sglang:token_usage": 0.2}) + "\n" + deep))
	if sum.Samples != 1 || sum.Failed != 1 {
		t.Errorf("summary %+v, want 1 sample and the deep line failed", sum)
	}
}

// The scraper stops at its bounds, saying so in a last line that the
// row's note carries, and never grows the file past what collect reads.
func TestScrapeStopsAtItsBounds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{engine=\"0\"} 1\n")
	}))
	defer srv.Close()
	old := bounds
	t.Cleanup(func() { bounds = old })
	for _, b := range []struct{ samples, bytes int }{{4, MaxFile}, {MaxSamples, stopRoom + 500}} {
		bounds = b
		var out strings.Builder
		// Scrape returns by itself at the bound.
		if err := Scrape(context.Background(), func() []Endpoint { return []Endpoint{{URL: srv.URL}} }, time.Millisecond, &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		last := lines[len(lines)-1]
		if !strings.Contains(last, "scraping stopped after") || len(lines) > b.samples || out.Len() > b.bytes {
			t.Errorf("bounds %+v: %d lines, %d bytes, last %s", b, len(lines), out.Len(), last)
		}
		if _, sum := Derive([]byte(out.String())); !strings.Contains(sum.Note, "scraping stopped") {
			t.Errorf("bounds %+v: the note %q does not say scraping stopped", b, sum.Note)
		}
	}
}
