package upstream

import "testing"

// cacheResetFacts are what setting a case's cache state reads from each
// release: the route that empties an engine's cache, when it refuses,
// the gauges that say the engine is idle, and (Dynamo) that no route
// clears its workers' caches over HTTP.
var cacheResetFacts = map[string][]struct{ key, value string }{
	"vllm": {
		{"endpoint", "/reset_prefix_cache"},
		{"env", "VLLM_SERVER_DEV_MODE"},
		{"reset_prefix_cache.refuses", ""},
		{"reset_prefix_cache.external", "reset_external"},
		{"reset_prefix_cache.external_unimplemented", ""},
		{"metric", "vllm:num_requests_running"},
		{"metric", "vllm:num_requests_waiting"},
		{"metric", "vllm:external_prefix_cache_queries"},
	},
	"sglang": {
		{"endpoint", "/flush_cache"},
		{"flush_cache.refuses", ""},
		{"flush_cache.clears", ""},
		{"metric", "sglang:num_running_reqs"},
		{"metric", "sglang:num_queue_reqs"},
	},
	"dynamo": {
		{"reset.route", "none"},
		{"reset.clear_kv_blocks", "/clear_kv_blocks"},
	},
}

// Every release states how its caches are reset before a cold case, and
// each gauge an idle check reads states its type and labels.
func TestCacheResetFacts(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range all {
		for _, w := range cacheResetFacts[r.Project] {
			seen[r.Project] = true
			checkKVTierFact(t, r, w.key, w.value)
		}
	}
	for p := range cacheResetFacts {
		if !seen[p] {
			t.Errorf("no facts for %s", p)
		}
	}
}
