// Package telemetry is what the engines say while a cell runs. A KV-cache
// tier is judged by how much cache it reuses, and vLLM, SGLang and Dynamo
// report exactly that on their Prometheus endpoints. The job runs
// "kvsweep job scrape" beside the harness: every interval it reads each
// endpoint the spec names or the harness lists (with the worker's role
// and name: ListedEndpoints), parses the exposition text with the
// Prometheus project's own parser (expfmt), keeps each series of the
// catalog's families with its rank labels (never summed), and appends one
// JSON line a scrape to cells/ID/telemetry.jsonl (a dead endpoint is a
// line with its error).
//
// Collect derives the figures from that series (DeriveWindows), per
// worker (an endpoint plus its series' rank labels) and for the cell, per
// case window (case-windows.jsonl) or over the whole cell where no window
// was marked: prefix_cache_hit_rate (the GPU-local prefix cache),
// kv_connector_hit_rate (vLLM's external, KV-connector counters),
// kv_cache_usage_peak (0 to 1), preemptions, and tokens by source. Each
// comes from the first entry of the Catalog (catalog.go: an engine's
// family in some versions, its type and unit) the worker exposed:
// counters as their increase over the window (reset-aware), gauges
// reduced per series (peak, or the mean of a point-in-time gauge's
// non-zero samples), never summed across series. A missing or dead
// endpoint is recorded and never fails a cell by itself; a validity rule
// can require a figure (prefix_cache_hit_rate >= 0.5).
package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Limits: a scrape's body, the samples kept (a day at 10 s is 8,640
// scrapes of one endpoint), what collect reads, the series kept of a
// family in one scrape, the labels kept of a series and the bytes of a
// label's value, and a line of the file.
const (
	MaxBody        = 8 << 20
	MaxSamples     = 50000
	MaxFile        = 64 << 20
	MaxSeries      = 64
	MaxLabelValue  = 64
	MaxLine        = 1 << 20
	maxSeriesLabel = 8
)

// keptLabels are the labels a series keeps: its rank and, behind a
// router or sidecar that serves several workers on one endpoint (SGLang's
// smg: worker_addr), the worker it is; its source (tokens by source); and
// the model label whose name tells SGLang's eras apart.
var keptLabels = []string{"engine", "dp_rank", "tp_rank", "pp_rank", "moe_ep_rank", "worker_addr", "worker_id", "source", "cache_source", "model_name", "name"}

// Sample is one scrape of one endpoint: a line of the file.
type Sample struct {
	T      int64    `json:"t"` // Unix milliseconds
	URL    string   `json:"url"`
	Role   string   `json:"role,omitempty"` // from the endpoints file
	Name   string   `json:"name,omitempty"`
	Error  string   `json:"error,omitempty"`
	Series []Series `json:"series,omitempty"`
	// Values is what kvsweep wrote before it kept series: family -> the
	// sum over its series (read still, as series without labels).
	Values map[string]float64 `json:"values,omitempty"`
}

// Series is one series of a kept family, with the labels kept.
type Series struct {
	Family string            `json:"f"`
	Labels map[string]string `json:"l,omitempty"`
	Value  float64           `json:"v"`
}

// Parse reads an exposition text and returns the series of the kept
// families (at most MaxSeries a family; values that are not finite are
// dropped), in the catalog's order.
func Parse(body io.Reader) ([]Series, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		return nil, err
	}
	var out []Series
	for _, name := range Families {
		f, ok := fams[name]
		if !ok {
			continue
		}
		for i, m := range f.GetMetric() {
			if i == MaxSeries {
				break
			}
			v := value(f.GetType(), m)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			out = append(out, Series{Family: name, Labels: labelsOf(m), Value: v})
		}
	}
	return out, nil
}

func labelsOf(m *dto.Metric) map[string]string {
	var l map[string]string
	for _, lp := range m.GetLabel() {
		if !slices.Contains(keptLabels, lp.GetName()) || len(l) == maxSeriesLabel {
			continue
		}
		if l == nil {
			l = map[string]string{}
		}
		v := lp.GetValue()
		if len(v) > MaxLabelValue {
			v = v[:MaxLabelValue]
		}
		l[lp.GetName()] = v
	}
	return l
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

// Scrape reads every endpoint eps gives (asked again at each interval:
// a harness may add the endpoints it starts) each interval until ctx
// ends, appending a sample a scrape to w: at most MaxSamples lines and
// MaxFile bytes in all (what collect reads), and when either is reached a
// last line says scraping stopped, so the row says why later windows have
// no figures.
func Scrape(ctx context.Context, eps func() []Endpoint, interval time.Duration, w io.Writer) error {
	client := &http.Client{Timeout: max(interval, time.Second)}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	n, written := 0, 0
	for {
		for _, e := range eps() {
			s := scrapeOne(ctx, client, e.URL)
			s.URL, s.Role, s.Name = e.URL, e.Role, e.Name
			if ctx.Err() != nil {
				return nil
			}
			line, err := json.Marshal(s)
			if err == nil && len(line) >= MaxLine {
				s.Series, s.Error = nil, fmt.Sprintf("a line of %d bytes, over %d: series dropped", len(line), MaxLine)
				line, err = json.Marshal(s)
			}
			if err != nil {
				return err
			}
			if n+1 >= bounds.samples || written+len(line)+1 > bounds.bytes-stopRoom {
				stop, _ := json.Marshal(Sample{T: time.Now().UnixMilli(), URL: e.URL,
					Error: fmt.Sprintf("scraping stopped after %d samples (%d bytes): the series' bounds are %d samples and %d bytes", n, written, MaxSamples, MaxFile)})
				_, err := w.Write(append(stop, '\n'))
				return err
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return err
			}
			n, written = n+1, written+len(line)+1
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// stopRoom is kept under MaxFile for the line that says scraping stopped.
const stopRoom = 4 << 10

// bounds are Scrape's (tests set smaller ones).
var bounds = struct{ samples, bytes int }{MaxSamples, MaxFile}

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
	s.Series = v
	return s
}
