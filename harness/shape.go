package harness

import (
	"bytes"
	"fmt"
	"strconv"
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

// unread are files of benchmarks no format reads, by a key that shows
// them (../shared/realout has one of each): named, so the refusal says
// what the file is rather than which key it lacks.
var unread = []struct{ ptr, what string }{
	{"/query_ttft_per_prompt", "LMCache's LongDocQA result (long_doc_qa.py --json-output: a mean TTFT in seconds, no percentiles, no request count)"},
	{"/0/results/ttft_p50_values", "Dynamo's router benchmark history (benchmark_history.json: AIPerf's p25/p50/p75 per prefix ratio, no request count)"},
}

// unreadFile names the benchmark v (the document at pos, computed only
// then) comes from when no format reads it.
func unreadFile(pos func() string, v any) error {
	for _, u := range unread {
		if has(v, u.ptr) {
			return fmt.Errorf("%s: %s (it has %s): no kvsweep format reads it; have the harness write one of %s, or a result.json", pos(), u.what, u.ptr, strings.Join(Formats, ", "))
		}
	}
	return nil
}

// has says whether the JSON pointer ptr (no escapes) is in v, through
// objects and arrays.
func has(v any, ptr string) bool {
	for _, tok := range strings.Split(ptr, "/")[1:] {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[tok]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return false
			}
			v = t[i]
		default:
			return false
		}
	}
	return true
}

// shape refuses d when it has another format's shape than want's.
func shape(d doc, want string) error {
	if err := unreadFile(func() string { return d.pos(d.at[""]) }, d.root); err != nil {
		return err
	}
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
