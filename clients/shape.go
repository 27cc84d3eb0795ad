package clients

import (
	"bytes"
	"fmt"
	"strings"
)

// Each format checks that a file has its shape, and a file of another
// format is refused naming that format: read as the wrong one, a file
// would pass with a metric or two and every latency silently missing.

// what each format's files are, for messages.
var described = map[string]string{
	VLLMBench:               "a bench serve or bench_serving result",
	SGLangBench:             "a bench serve or bench_serving result",
	AIPerf:                  "an AIPerf profile export",
	InferencePerf:           "inference-perf's client report (stage_N_lifecycle_metrics.json)",
	InferencePerfPrometheus: "inference-perf's server report (stage_N_prometheus_metrics.json)",
}

// kindOf is the format whose shape d has, and what shows it ("" where
// none does).
func kindOf(d doc) (format, why string) {
	for _, sig := range []struct{ ptr, format string }{
		{"/records", AIPerf},
		{"/aiperf_version", AIPerf},
		{"/successes/latency", InferencePerf},
		{"/successes/throughput", InferencePerf},
		{"/successes/time_to_first_token", InferencePerfPrometheus},
		{"/successes/rate", InferencePerfPrometheus},
		{"/successes/kv_cache_usage_percentage", InferencePerfPrometheus},
	} {
		if _, ok := d.get(sig.ptr); ok {
			return sig.format, "it has " + sig.ptr
		}
	}
	if v, ok := d.get("/request_count"); ok {
		if _, obj := v.(map[string]any); obj {
			return AIPerf, "/request_count is an object of statistics"
		}
	}
	if v, ok := d.get("/completed"); ok {
		if _, obj := v.(map[string]any); !obj {
			return VLLMBench, "it has /completed"
		}
	}
	return "", ""
}

// shape refuses d when it has another format's shape than want's.
func shape(d doc, want string) error {
	k, why := kindOf(d)
	if k == "" || described[k] == described[want] {
		return nil
	}
	as := k
	if k == VLLMBench {
		as = VLLMBench + " or " + SGLangBench
	}
	return fmt.Errorf("%s: %s (%s), not %s: read it as format %s", d.pos(d.at[""]), described[k], why, described[want], as)
}

// notJSON names a file that is none of the formats' and not JSON at all:
// AIPerf's CSV summary, written beside its JSON export.
func notJSON(name string, b []byte) error {
	first, _, _ := bytes.Cut(bytes.TrimLeft(b, " \t\r\n\ufeff"), []byte("\n"))
	if strings.HasPrefix(string(first), "Metric,avg,") || strings.HasPrefix(string(first), "Metric,") && bytes.Contains(first, []byte(",p99")) {
		return fmt.Errorf("%s:1:1: %q: AIPerf's CSV summary: read the JSON export (profile_export_aiperf.json) as format aiperf", name, string(first[:min(len(first), 24)]))
	}
	return nil
}
