package upstream

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/telemetry"
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
		{"metric.counts", "vllm:external_prefix_cache_queries"},
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

// catalogPinned are the telemetry catalog's entries for the releases
// pinned here, each with its project: every family such an entry reads is
// a metric fact of that release, with the type the entry reads it as
// (vLLM's facts name a counter without its _total).
var catalogPinned = map[string]string{
	"vllm-v1": "vllm", "vllm-external": "vllm", "vllm-kv-usage": "vllm", "vllm-preemptions": "vllm", "vllm-by-source": "vllm",
	"sglang-counters": "sglang", "sglang-gauge": "sglang", "sglang-usage": "sglang", "sglang-by-source": "sglang",
	"dynamo-usage": "dynamo",
}

func TestTelemetryCatalogFacts(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	byProject := map[string]*Release{}
	for _, r := range all {
		byProject[r.Project] = r
	}
	seen := 0
	for _, e := range telemetry.Catalog {
		project, ok := catalogPinned[e.ID]
		if !ok {
			continue
		}
		seen++
		r := byProject[project]
		for _, fam := range []string{e.Num, e.Den} {
			if fam == "" {
				continue
			}
			f, ok := r.Find("metric", fam)
			if !ok {
				f, ok = r.Find("metric", strings.TrimSuffix(fam, "_total"))
			}
			want := map[bool]string{true: "Counter", false: "Gauge"}[e.How == telemetry.Ratio || e.How == telemetry.Increase || e.How == telemetry.BySource]
			switch {
			case !ok:
				t.Errorf("catalog %s: %s is no metric fact of %s", e.ID, fam, r.File)
			case !strings.Contains(f.Note, want):
				t.Errorf("catalog %s: %s is read as a %s, the fact says %q [%s]", e.ID, fam, want, f.Note, r.Cite(f))
			case e.Unit == "ratio" && want == "Gauge" && !strings.Contains(f.Note, "0.0-1.0") && !strings.Contains(f.Note, "fraction"):
				t.Errorf("catalog %s: %s is read as a ratio 0 to 1, the fact does not say so [%s]", e.ID, fam, r.Cite(f))
			}
		}
	}
	if seen != len(catalogPinned) {
		t.Errorf("%d of the %d pinned entries are in the catalog", seen, len(catalogPinned))
	}
	// Dynamo's kvstats names are gone at v1.2.0: the catalog keeps them for
	// the releases before, never as the pinned one's.
	if f, ok := byProject["dynamo"].Find("metric", "total_blocks"); !ok || !strings.Contains(f.Note, "NO kvstats_ prefix") {
		t.Errorf("no Dynamo fact saying the kvstats names are gone")
	}
	for _, e := range telemetry.Catalog {
		if strings.Contains(e.Num, "kvstats") && strings.Contains(e.Versions, "1.2") {
			t.Errorf("catalog %s: kvstats names claimed for Dynamo %s", e.ID, e.Versions)
		}
	}
}
