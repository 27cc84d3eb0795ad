// Package telemetry is what the engines say while a cell runs. A KV-cache
// tier is judged by how much cache it reuses, and vLLM, SGLang and Dynamo
// report exactly that on their Prometheus endpoints. The job runs
// "kvsweep job scrape" beside the harness: every interval it reads each
// endpoint the spec names, parses the exposition text with the Prometheus
// project's own parser (expfmt), keeps the families below summed over
// their series, and appends one JSON line a scrape to
// cells/ID/telemetry.jsonl (a dead endpoint is a line with its error).
// Collect derives the cell's figures from that series (Derive):
//
//	prefix_cache_hit_rate  hits / queries over the run: vLLM's counters
//	                       vllm:prefix_cache_hits_total and
//	                       vllm:prefix_cache_queries_total; the mean of
//	                       SGLang's gauge sglang:cache_hit_rate and of
//	                       Dynamo's dynamo_component_kvstats_gpu_prefix_cache_hit_rate
//	                       (SGLang's first metrics, labelled name=, gave
//	                       it in percent: divided by 100)
//	kv_cache_usage_peak    the highest KV-cache usage seen (0 to 1):
//	                       vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc
//	                       before v1), sglang:token_usage,
//	                       dynamo_component_kvstats_gpu_cache_usage_percent
//	preemptions            the increase of vllm:num_preemptions_total
//
// A counter that goes back (an engine restarted) counts from its new
// start. A missing or dead endpoint is recorded and never fails a cell by
// itself; a validity rule can require a figure (prefix_cache_hit_rate >= 0.5).
package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// Limits: a scrape's body, the samples kept (a day at 10 s is 8,640
// scrapes of one endpoint), and what collect reads.
const (
	MaxBody    = 8 << 20
	MaxSamples = 50000
	MaxFile    = 64 << 20
)

// Families are the metric families kept from each scrape.
var Families = []string{
	"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
	"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "vllm:num_preemptions_total",
	"sglang:cache_hit_rate", "sglang:token_usage",
	"dynamo_component_kvstats_gpu_prefix_cache_hit_rate", "dynamo_component_kvstats_gpu_cache_usage_percent",
}

// Sample is one scrape of one endpoint: a line of the file.
type Sample struct {
	T      int64              `json:"t"` // Unix milliseconds
	URL    string             `json:"url"`
	Error  string             `json:"error,omitempty"`
	Values map[string]float64 `json:"values,omitempty"` // family -> sum over its series
}

// Parse reads an exposition text and returns the kept families, each
// summed over its series (engines label theirs by model and engine).
func Parse(body io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, name := range Families {
		f, ok := fams[name]
		if !ok {
			// SGLang behind the smg gRPC sidecar writes sglang_NAME.
			if f, ok = fams[strings.Replace(name, "sglang:", "sglang_", 1)]; !ok || !strings.HasPrefix(name, "sglang:") {
				continue
			}
		}
		sum := 0.0
		for _, m := range f.GetMetric() {
			v := value(f.GetType(), m)
			if name == "sglang:cache_hit_rate" && percentHitRate(m) {
				v /= 100
			}
			sum += v
		}
		out[name] = sum
	}
	return out, nil
}

// percentHitRate: SGLang's first metrics (late 2024, labelled name=, not
// model_name=) gave sglang:cache_hit_rate in percent (10.61); the rework
// after made it the ratio it is since.
func percentHitRate(m *dto.Metric) bool {
	name, model := false, false
	for _, l := range m.GetLabel() {
		name = name || l.GetName() == "name"
		model = model || l.GetName() == "model_name"
	}
	return name && !model
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// Scrape reads every endpoint urls gives (asked again at each interval:
// a harness may add the endpoints it starts) each interval until ctx
// ends, appending a sample a scrape to w, at most MaxSamples in all.
func Scrape(ctx context.Context, urls func() []string, interval time.Duration, w io.Writer) error {
	client := &http.Client{Timeout: max(interval, time.Second)}
	enc := json.NewEncoder(w)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 0; n < MaxSamples; {
		for _, u := range urls() {
			s := scrapeOne(ctx, client, u)
			s.URL = u
			if ctx.Err() != nil {
				return nil
			}
			if err := enc.Encode(s); err != nil {
				return err
			}
			n++
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	return nil
}

func scrapeOne(ctx context.Context, client *http.Client, url string) Sample {
	s := Sample{T: time.Now().UnixMilli()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.Error = resp.Status
		return s
	}
	v, err := Parse(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		s.Error = "parsing the exposition text: " + err.Error()
		return s
	}
	s.Values = v
	return s
}

// Summary is how the scraping went, for the cell's row.
type Summary struct {
	Samples int    `json:"samples"`
	Failed  int    `json:"failed,omitempty"`
	Note    string `json:"note,omitempty"` // the last error, or what was not seen
}

// Figure is one derived figure.
type Figure struct {
	Name, Unit, Direction string
	Value                 float64
}

// Derive reads the series (the file's bytes) and derives the figures; a
// line that does not parse is skipped and counted as failed.
func Derive(b []byte) ([]Figure, Summary) {
	var sum Summary
	series := map[string][]Sample{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var s Sample
		// The file is in the cell's directory, where the harness writes
		// too: a line nested past 64 levels is not one scrape wrote.
		if jsonscan.Bound(sc.Bytes(), jsonscan.MaxDepth, 1<<20) != nil || json.Unmarshal(sc.Bytes(), &s) != nil {
			sum.Failed++
			continue
		}
		if s.Error != "" {
			sum.Failed++
			sum.Note = s.Error
			continue
		}
		sum.Samples++
		series[s.URL] = append(series[s.URL], s)
	}
	var figs []Figure
	hits, queries, preempt, counted := 0.0, 0.0, 0.0, false
	var rates []float64
	peak, hasPeak := 0.0, false
	for _, ss := range series {
		if _, ok := ss[0].Values["vllm:prefix_cache_queries_total"]; ok {
			hits += increase(ss, "vllm:prefix_cache_hits_total")
			queries += increase(ss, "vllm:prefix_cache_queries_total")
			counted = true
		}
		preempt += increase(ss, "vllm:num_preemptions_total")
		for _, s := range ss {
			for _, g := range []string{"sglang:cache_hit_rate", "dynamo_component_kvstats_gpu_prefix_cache_hit_rate"} {
				if v, ok := s.Values[g]; ok {
					rates = append(rates, v)
				}
			}
			for _, g := range []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "dynamo_component_kvstats_gpu_cache_usage_percent"} {
				if v, ok := s.Values[g]; ok {
					if strings.HasSuffix(g, "_percent") && v > 1 {
						v /= 100
					}
					peak, hasPeak = math.Max(peak, v), true
				}
			}
		}
	}
	switch {
	case counted && queries > 0:
		figs = append(figs, Figure{"prefix_cache_hit_rate", "ratio", "higher", hits / queries})
	case len(rates) > 0:
		figs = append(figs, Figure{"prefix_cache_hit_rate", "ratio", "higher", mean(rates)})
	}
	if hasPeak {
		figs = append(figs, Figure{"kv_cache_usage_peak", "ratio", "", peak})
	}
	if counted {
		figs = append(figs, Figure{"preemptions", "", "lower", preempt})
	}
	if sum.Samples == 0 && sum.Note == "" {
		sum.Note = "no sample"
	} else if len(figs) == 0 && sum.Samples > 0 {
		sum.Note = fmt.Sprintf("none of %s in %d samples", strings.Join(Families[:3], ", ")+", ...", sum.Samples)
	}
	slices.SortFunc(figs, func(a, b Figure) int { return strings.Compare(a.Name, b.Name) })
	return figs, sum
}

// increase is how much a counter rose over the series, counting from
// the new start after a reset.
func increase(ss []Sample, name string) float64 {
	total, prev, have := 0.0, 0.0, false
	for _, s := range ss {
		v, ok := s.Values[name]
		if !ok {
			continue
		}
		switch {
		case !have:
		case v >= prev:
			total += v - prev
		default: // reset
			total += v
		}
		prev, have = v, true
	}
	return total
}

func mean(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}
