package clients

import (
	"fmt"
	"strings"
)

// stats are the statistics read from a {mean|avg, median|p50, pNN, std}
// object, by source name -> the convention's.
var stats = map[string]string{"mean": "mean", "avg": "mean", "median": "p50", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "std": "std"}

// latencyStats adds METRIC_STAT_ms for each statistic of the object at
// ptr, scaled by toMS (1000 for seconds); an absent object adds nothing.
func latencyStats(d doc, r *Run, ptr, metric string, toMS float64) error {
	obj, ok := d.get(ptr)
	if !ok || obj == nil {
		return nil
	}
	m, isObj := obj.(map[string]any)
	if !isObj {
		return fmt.Errorf("%s: %s: expected an object of statistics, got %s", d.pos(d.at[ptr]), ptr, kind(obj))
	}
	for src, stat := range stats {
		if _, ok := m[src]; !ok {
			continue
		}
		v, ok, err := d.number(ptr + "/" + src)
		if err != nil {
			return err
		}
		if ok {
			r.add(metric+"_"+stat+"_ms", v*toMS, ms, lower)
		}
	}
	return nil
}

// one adds a metric from a number at ptr, if there is one.
func one(d doc, r *Run, ptr, name, unit, direction string, scale float64) (float64, bool, error) {
	v, ok, err := d.number(ptr)
	if err != nil || !ok {
		return 0, false, err
	}
	r.add(name, v*scale, unit, direction)
	return v, true, nil
}

// readAIPerf reads AIPerf's profile_export_aiperf.json (and genai-perf's
// profile_export_genai_perf.json, the same shape): a metric a key, each
// an object {unit, avg, p50, p99, ...}; top level, or under "records"
// (AIPerf 0.1.x, whose tags were ttft and ttst before aiperf PR #343
// renamed them). AIPerf has no TPOT: inter_token_latency is itl.
func readAIPerf(d doc, r *Run) error {
	if err := shape(d, AIPerf); err != nil {
		return err
	}
	base := ""
	if _, ok := d.get("/records"); ok {
		base = "/records"
	}
	for src, metric := range map[string]string{"time_to_first_token": "ttft", "ttft": "ttft", "inter_token_latency": "itl", "request_latency": "e2el", "time_to_second_token": "ttst", "ttst": "ttst"} {
		ptr := base + "/" + src
		unit, err := d.text(ptr + "/unit")
		if err != nil {
			return err
		}
		scale, err := toMS(d, ptr, unit)
		if err != nil {
			return err
		}
		if err := latencyStats(d, r, ptr, metric, scale); err != nil {
			return err
		}
	}
	for src, m := range map[string][2]string{"output_token_throughput": {"output_tokens_per_s", tokPerS}, "request_throughput": {"requests_per_s", reqPerS}, "total_token_throughput": {"total_tokens_per_s", tokPerS}} {
		if _, _, err := one(d, r, base+"/"+src+"/avg", m[0], m[1], higher, 1); err != nil {
			return err
		}
	}
	completed, ok, err := one(d, r, base+"/request_count/avg", "completed", count, higher, 1)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %s/request_count: missing (is this an AIPerf or genai-perf profile export?)", d.pos(0), base)
	}
	r.Completed = completed
	if !hasTTFT(r) {
		return fmt.Errorf("%s: %s/time_to_first_token: missing, and no %s/ttft (AIPerf 0.1.x): an AIPerf profile export has TTFT statistics; was it a run without --streaming?", d.pos(0), base, base)
	}
	failed, ok, err := one(d, r, base+"/error_request_count/avg", "failed", count, lower, 1)
	if err != nil {
		return err
	}
	if !ok {
		// AIPerf writes error_request_count only when a request failed;
		// a clean run says so by an empty error_summary.
		if es, present := d.get("/error_summary"); present {
			if a, isArr := es.([]any); isArr && len(a) == 0 {
				failed, ok = 0, true
				r.add("failed", 0, count, lower)
				r.Notes = append(r.Notes, "failed = 0 (no error_request_count and /error_summary is empty: AIPerf writes the count only when a request failed)")
			}
		}
	}
	if ok {
		r.Failed, r.HasFailed = failed, true
	}
	return nil
}

func hasTTFT(r *Run) bool {
	for _, m := range r.Metrics {
		if strings.HasPrefix(m.Name, "ttft_") {
			return true
		}
	}
	return false
}

// toMS is the factor from a latency's unit to ms.
func toMS(d doc, ptr, unit string) (float64, error) {
	switch strings.ToLower(unit) {
	case "", "ms":
		return 1, nil
	case "ns":
		return 1e-6, nil
	case "us":
		return 1e-3, nil
	case "s", "sec":
		return 1000, nil
	}
	return 0, fmt.Errorf("%s: %s/unit: unknown latency unit %q (expected ms, us, ns or s)", d.pos(d.at[ptr+"/unit"]), ptr, unit)
}

// readInferencePerf reads inference-perf's client report of one load
// stage (stage_N_lifecycle_metrics.json). Its latencies are seconds.
func readInferencePerf(d doc, r *Run) error {
	if err := shape(d, InferencePerf); err != nil {
		return err
	}
	for src, metric := range map[string]string{"time_to_first_token": "ttft", "time_per_output_token": "tpot", "inter_token_latency": "itl", "request_latency": "e2el"} {
		if err := latencyStats(d, r, "/successes/latency/"+src, metric, 1000); err != nil {
			return err
		}
	}
	for src, m := range map[string][2]string{"output_tokens_per_sec": {"output_tokens_per_s", tokPerS}, "total_tokens_per_sec": {"total_tokens_per_s", tokPerS}, "requests_per_sec": {"requests_per_s", reqPerS}} {
		if _, _, err := one(d, r, "/successes/throughput/"+src, m[0], m[1], higher, 1); err != nil {
			return err
		}
	}
	if err := successes(d, r); err != nil {
		return err
	}
	rate, ok, err := d.rate("/load_summary/requested_rate")
	r.RequestRate, r.HasRequestRate = rate, ok
	return err
}

// readInferencePerfPrometheus reads inference-perf's server report of
// one stage (stage_N_prometheus_metrics.json): vLLM's metrics as scraped,
// seconds, and the KV cache's. Its kv_cache_usage_percentage is, despite
// the name, vLLM's gpu_cache_usage_perc as scraped: a 0-1 fraction
// (inference-perf's reportgen/base.py), recorded as the ratio
// kv_cache_usage, as telemetry's kv_cache_usage_peak is.
func readInferencePerfPrometheus(d doc, r *Run) error {
	if err := shape(d, InferencePerfPrometheus); err != nil {
		return err
	}
	for src, metric := range map[string]string{"time_to_first_token": "ttft", "time_per_output_token": "tpot", "request_latency": "e2el"} {
		if err := latencyStats(d, r, "/successes/"+src, metric, 1000); err != nil {
			return err
		}
	}
	for _, m := range []struct{ ptr, name, unit, dir string }{
		{"/successes/output_len/rate", "output_tokens_per_s", tokPerS, higher},
		{"/successes/rate", "requests_per_s", reqPerS, higher},
		{"/successes/prefix_cache_hit_percent/mean", "prefix_cache_hit_percent", percent, higher},
		{"/successes/kv_cache_usage_percentage/mean", "kv_cache_usage", ratio, ""},
		{"/successes/num_preemptions_total/mean", "preemptions", "", lower},
	} {
		if _, _, err := one(d, r, m.ptr, m.name, m.unit, m.dir, 1); err != nil {
			return err
		}
	}
	return successes(d, r)
}

// successes reads inference-perf's request counts.
func successes(d doc, r *Run) error {
	completed, ok, err := one(d, r, "/successes/count", "completed", count, higher, 1)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: /successes/count: missing (is this an inference-perf report?)", d.pos(0))
	}
	r.Completed = completed
	failed, ok, err := one(d, r, "/failures/count", "failed", count, lower, 1)
	if ok {
		r.Failed, r.HasFailed = failed, true
	}
	return err
}
