package cachectl

import (
	"net/url"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/upstream"
)

// What the job sends to and reads from the engines agrees with the
// pinned releases' facts: the reset routes, the idle gauges, the
// connector's counter and reset parameter.
func TestAgreesWithUpstream(t *testing.T) {
	all, err := upstream.Load()
	if err != nil {
		t.Fatal(err)
	}
	has := func(project, key, value string) bool {
		for _, r := range all {
			if r.Project != project {
				continue
			}
			for _, f := range r.All(key) {
				if f.Value() == value {
					return true
				}
			}
		}
		return false
	}
	reset := func(kind string) string {
		u, err := resetURL(Endpoint{URL: "http://h:1/metrics"}, kind, metrics{sum: map[string]float64{}})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := url.Parse(u)
		return p.Path
	}
	for _, c := range []struct{ project, key, value string }{
		{"vllm", "endpoint", reset(VLLM)},
		{"sglang", "endpoint", reset(SGLang)},
		{"vllm", "metric", busy[VLLM][0]},
		{"vllm", "metric", busy[VLLM][1]},
		{"sglang", "metric", busy[SGLang][0]},
		{"sglang", "metric", busy[SGLang][1]},
		{"vllm", "metric", strings.TrimSuffix(externalQueries, "_total")},
		{"vllm", "reset_prefix_cache.external", "reset_external"},
		{"vllm", "env", "VLLM_SERVER_DEV_MODE"},
		{"dynamo", "reset.route", "none"},
	} {
		if !has(c.project, c.key, c.value) {
			t.Errorf("%s has no %s fact %q", c.project, c.key, c.value)
		}
	}
}
