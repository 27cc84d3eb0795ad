package harness

import (
	"fmt"
	"strings"
)

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
