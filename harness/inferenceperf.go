package harness

import "fmt"

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
