package telemetry

import "strings"

// How is the way an entry's families become a figure.
type How int

const (
	// Ratio is the increase of the counter Num over the increase of the
	// counter Den, each summed over the worker's series (counters may be
	// summed; the window's rule is Derive's).
	Ratio How = iota
	// Increase is the increase of the counter Num, summed over series.
	Increase
	// Peak is the highest sample of the gauge Num, over every series.
	Peak
	// MeanNonZero is the mean of the gauge Num's non-zero samples: a
	// point-in-time gauge an engine overwrites with each batch's value
	// and resets to 0 between batches (0 when every sample was 0).
	MeanNonZero
	// Last is the mean over series of each series' last sample in the
	// window: a gauge the engine keeps cumulative since it started.
	Last
	// BySource is the increase of the counter Num for each value of the
	// label Label, summed over the series with that value.
	BySource
)

// Entry is one row of the catalog: where an engine of some versions
// reports a figure, and how it is read.
type Entry struct {
	ID       string // recorded per worker: which entry gave a figure
	Engine   string // vLLM, SGLang, Dynamo
	Versions string
	Figure   string // the figure it gives (BySource: the prefix of its figures)
	How      How
	Num, Den string // the families
	Label    string // BySource: the label whose values name the figures
	// Unit is the unit the engine reports in: "ratio" (0 to 1),
	// "percent" (read as /100), "tokens", "count".
	Unit string
	// Era, when set, holds the series an entry reads to those whose
	// labels it accepts (SGLang's percent era: name=, not model_name=).
	Era func(labels map[string]string) bool
}

// The figures Derive gives.
const (
	HitRate       = "prefix_cache_hit_rate"
	ConnectorRate = "kv_connector_hit_rate"
	UsagePeak     = "kv_cache_usage_peak"
	Preemptions   = "preemptions"
)

// Catalog is every entry, in the order they are tried: for each figure
// of a worker, the first entry whose families the worker exposed gives
// it (counters before gauges, newer names before older ones).
var Catalog = withUnderscoreTwins([]Entry{
	{ID: "vllm-v1", Engine: "vLLM", Versions: "v1, 0.10+", Figure: HitRate, How: Ratio, Num: "vllm:prefix_cache_hits_total", Den: "vllm:prefix_cache_queries_total", Unit: "ratio"},
	{ID: "vllm-v1-gpu", Engine: "vLLM", Versions: "v1, 0.8-0.9", Figure: HitRate, How: Ratio, Num: "vllm:gpu_prefix_cache_hits_total", Den: "vllm:gpu_prefix_cache_queries_total", Unit: "ratio"},
	{ID: "vllm-v0", Engine: "vLLM", Versions: "V0 (to 0.9)", Figure: HitRate, How: Last, Num: "vllm:gpu_prefix_cache_hit_rate", Unit: "ratio"},
	{ID: "sglang-counters", Engine: "SGLang", Versions: "with cached_tokens_total (0.5.11)", Figure: HitRate, How: Ratio, Num: "sglang:cached_tokens_total", Den: "sglang:prompt_tokens_total", Unit: "ratio"},
	{ID: "sglang-gauge", Engine: "SGLang", Versions: "labelled model_name= (2025+)", Figure: HitRate, How: MeanNonZero, Num: "sglang:cache_hit_rate", Unit: "ratio", Era: ratioEra},
	{ID: "sglang-gauge-percent", Engine: "SGLang", Versions: "labelled name= (late 2024)", Figure: HitRate, How: MeanNonZero, Num: "sglang:cache_hit_rate", Unit: "percent", Era: percentEra},
	{ID: "dynamo-kvstats", Engine: "Dynamo", Versions: "kvstats (to 0.8)", Figure: HitRate, How: MeanNonZero, Num: "dynamo_component_kvstats_gpu_prefix_cache_hit_rate", Unit: "ratio"},

	{ID: "vllm-external", Engine: "vLLM", Versions: "v1 with a KV connector (0.20.1)", Figure: ConnectorRate, How: Ratio, Num: "vllm:external_prefix_cache_hits_total", Den: "vllm:external_prefix_cache_queries_total", Unit: "ratio"},

	{ID: "vllm-kv-usage", Engine: "vLLM", Versions: "v1, 0.10+", Figure: UsagePeak, How: Peak, Num: "vllm:kv_cache_usage_perc", Unit: "ratio"},
	{ID: "vllm-gpu-usage", Engine: "vLLM", Versions: "V0, v1 to 0.9", Figure: UsagePeak, How: Peak, Num: "vllm:gpu_cache_usage_perc", Unit: "ratio"},
	{ID: "sglang-usage", Engine: "SGLang", Versions: "all", Figure: UsagePeak, How: Peak, Num: "sglang:token_usage", Unit: "ratio"},
	{ID: "dynamo-usage", Engine: "Dynamo", Versions: "0.9+ (1.2.0)", Figure: UsagePeak, How: Peak, Num: "dynamo_component_gpu_cache_usage_percent", Unit: "ratio"},
	{ID: "dynamo-kvstats-usage", Engine: "Dynamo", Versions: "kvstats (to 0.8)", Figure: UsagePeak, How: Peak, Num: "dynamo_component_kvstats_gpu_cache_usage_percent", Unit: "ratio"},

	{ID: "vllm-preemptions", Engine: "vLLM", Versions: "V0, v1", Figure: Preemptions, How: Increase, Num: "vllm:num_preemptions_total", Unit: "count"},

	{ID: "vllm-by-source", Engine: "vLLM", Versions: "v1 (0.20.1)", Figure: "prompt_tokens_", How: BySource, Num: "vllm:prompt_tokens_by_source_total", Label: "source", Unit: "tokens"},
	{ID: "sglang-by-source", Engine: "SGLang", Versions: "0.5.11", Figure: "cached_tokens_", How: BySource, Num: "sglang:cached_tokens_total", Label: "cache_source", Unit: "tokens"},
})

// expected is the figures each engine reports, for the note on a worker
// that did not expose any family of one.
var expected = map[string][]string{
	"vLLM":   {HitRate, UsagePeak, Preemptions},
	"SGLang": {HitRate, UsagePeak},
	"Dynamo": {UsagePeak},
}

// withUnderscoreTwins adds, after the SGLang entries, their twins named
// sglang_…, as SGLang behind sgl-router or the smg gRPC sidecar writes
// them.
func withUnderscoreTwins(es []Entry) []Entry {
	out := append([]Entry(nil), es...)
	for _, e := range es {
		if e.Engine != "SGLang" {
			continue
		}
		e.ID += "-underscore"
		e.Versions += ", behind sgl-router/gRPC (sglang_)"
		e.Num = strings.Replace(e.Num, "sglang:", "sglang_", 1)
		e.Den = strings.Replace(e.Den, "sglang:", "sglang_", 1)
		out = append(out, e)
	}
	return out
}

// percentEra: SGLang's first metrics (late 2024, labelled name=, not
// model_name=) gave sglang:cache_hit_rate in percent (10.61).
func percentEra(l map[string]string) bool {
	_, name := l["name"]
	_, model := l["model_name"]
	return name && !model
}

func ratioEra(l map[string]string) bool { return !percentEra(l) }

// Families are the metric families a scrape keeps: every family of the
// catalog.
var Families = families()

func families() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range Catalog {
		for _, f := range []string{e.Num, e.Den} {
			if f != "" && !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// counters are the families read as counters.
var counters = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range Catalog {
		if e.How == Ratio || e.How == Increase || e.How == BySource {
			m[e.Num] = true
			if e.Den != "" {
				m[e.Den] = true
			}
		}
	}
	return m
}()

// engineOf is the engine whose family name is.
func engineOf(family string) string {
	switch {
	case strings.HasPrefix(family, "vllm:"):
		return "vLLM"
	case strings.HasPrefix(family, "sglang"):
		return "SGLang"
	case strings.HasPrefix(family, "dynamo_"):
		return "Dynamo"
	}
	return ""
}
