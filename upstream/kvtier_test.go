package upstream

import (
	"regexp"
	"strings"
	"testing"
)

// kvTierFacts are the facts that measuring a KV-cache tier per worker and
// per case reads from every release of an engine or of Dynamo: the
// metrics a hit rate and a usage are computed from (each with its type and
// labels stated), the route that empties the cache before a cold case, and
// the benchmark dataset that sends shared prefixes.
var kvTierFacts = map[string][]struct{ key, value string }{
	"vllm": {
		{"metric", "vllm:prefix_cache_queries"},
		{"metric", "vllm:prefix_cache_hits"},
		{"metric", "vllm:external_prefix_cache_queries"},
		{"metric", "vllm:external_prefix_cache_hits"},
		{"metric", "vllm:prompt_tokens_by_source"},
		{"metric", "vllm:kv_cache_usage_perc"},
		{"metric", "vllm:num_preemptions"},
		{"metric.labels", ""},
		{"endpoint", "/reset_prefix_cache"},
		{"reset_prefix_cache.refuses", ""},
		{"bench_serve.shared_prefix", "prefix_repetition"},
		{"bench_serve.shared_prefix", "random"},
	},
	"sglang": {
		{"metric", "sglang:cached_tokens_total"},
		{"metric", "sglang:prompt_tokens_total"},
		{"metric", "sglang:realtime_tokens_total"},
		{"metric", "sglang:cache_hit_rate"},
		{"metric", "sglang:token_usage"},
		{"metric.labels", ""},
		{"endpoint", "/flush_cache"},
		{"flush_cache.refuses", ""},
		{"bench_serving.shared_prefix", "generated-shared-prefix"},
	},
	"dynamo": {
		{"metric", "dynamo_component_gpu_cache_usage_percent"},
		{"metric", "dynamo_component_total_blocks"},
		{"metric", "dynamo_frontend_worker_active_decode_blocks"},
		{"metric.labels.injected", ""},
	},
}

// metricTypeRE finds the Prometheus type a metric fact's note states.
var metricTypeRE = regexp.MustCompile(`\b(Counter|Gauge|IntGauge|Histogram)\b`)

// Every release of vLLM, SGLang and Dynamo with facts states what measuring
// the KV tier needs; a metric it names says its type and its labels, so a
// scrape is read as a counter, a gauge or a histogram, per the right series.
func TestKVTierFacts(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range all {
		want, ok := kvTierFacts[r.Project]
		if !ok {
			continue
		}
		seen[r.Project] = true
		for _, w := range want {
			checkKVTierFact(t, r, w.key, w.value)
		}
	}
	for p := range kvTierFacts {
		if !seen[p] {
			t.Errorf("no facts for %s", p)
		}
	}
}

// checkKVTierFact reports a release without a fact of key (whose first
// value is value, unless value is empty), and a metric none of whose facts
// states both its type and its labels.
func checkKVTierFact(t *testing.T, r *Release, key, value string) {
	t.Helper()
	var found []Fact
	for _, f := range r.All(key) {
		if value == "" || f.Value() == value {
			found = append(found, f)
		}
	}
	if len(found) == 0 {
		t.Errorf("%s: no %s fact %q", r.File, key, value)
		return
	}
	if key != "metric" {
		return
	}
	for _, f := range found {
		if metricTypeRE.MatchString(f.Note) && strings.Contains(f.Note, "label") {
			return
		}
	}
	t.Errorf("%s: metric %s: no fact's note states its type and its labels [%s]", r.File, value, r.Cite(found[0]))
}
