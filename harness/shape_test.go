package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/realout"
)

// Each format refuses the others' files, naming what the file is; and
// AIPerf's CSV summary is named as such.
func TestOtherFormatsRefused(t *testing.T) {
	for _, c := range []struct{ file, format, want string }{
		{"inference-perf-3.json", InferencePerfPrometheus, "inference-perf-3.json:1:1: inference-perf's client report (stage_N_lifecycle_metrics.json) (it has /successes/latency), not inference-perf's server report (stage_N_prometheus_metrics.json): read it as format inference-perf"},
		{"inference-perf-4.json", InferencePerf, "inference-perf-4.json:1:1: inference-perf's server report (stage_N_prometheus_metrics.json) (it has /successes/time_to_first_token), not inference-perf's client report (stage_N_lifecycle_metrics.json): read it as format inference-perf-prometheus"},
		{"aiperf-1.json", VLLMBench, "aiperf-1.json:1:1: an AIPerf profile export (it has /aiperf_version), not a bench serve or bench_serving result: read it as format aiperf"},
		{"aiperf-3.json", SGLangBench, "an AIPerf profile export (it has /records)"},
		{"vllm-1.json", AIPerf, "a bench serve or bench_serving result (it has /completed), not an AIPerf profile export: read it as format vllm-bench or sglang-bench"},
		{"inference-perf-1.json", AIPerf, "inference-perf's client report"},
		{"aiperf-4.json", InferencePerf, "an AIPerf profile export"},
		{"aiperf-3.csv", AIPerf, `aiperf-3.csv:1:1: "Metric,avg,min,max,p1,p5": AIPerf's CSV summary: read the JSON export (profile_export_aiperf.json) as format aiperf`},
		{"aiperf-3.csv", VLLMBench, "AIPerf's CSV summary: read the JSON export"},
	} {
		b, err := os.ReadFile(filepath.Join(realout.Dir(t), c.file))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRuns(c.format, c.file, b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as %s: %v, want %q", c.file, c.format, err, c.want)
		}
	}
}

// AIPerf: 0.1.x's ttft and ttst read, a clean run's failed = 0 said in
// the notes, and an export without TTFT refused.
func TestAIPerfVersions(t *testing.T) {
	r := readReal(t, "aiperf-3.json")[0]
	for n, v := range map[string]float64{"ttft_mean_ms": 2343.219436988764, "ttft_p99_ms": 3833.3894000399996, "ttst_mean_ms": 120.16625153932584, "failed": 11} {
		if m, ok := r.Metric(n); !ok || m.Value != v {
			t.Errorf("aiperf-3 %s = %v, want %v", n, m, v)
		}
	}
	r = readReal(t, "aiperf-4.json")[0]
	if !r.HasFailed || r.Failed != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "/error_summary is empty") {
		t.Errorf("aiperf-4: failed %v %v, notes %q", r.Failed, r.HasFailed, r.Notes)
	}
	res, err := Cases([]Run{r}, []string{"TC-01"}, Mapping{}, "aiperf-4.json")
	if err != nil || !strings.Contains(res.Cases[0].Message, "failed = 0 (no error_request_count") {
		t.Errorf("the note in the case: %v %+v", err, res)
	}
	// errors listed but no count: failed unknown, not 0.
	if runs, err := ReadRuns(AIPerf, "e.json", []byte(`{"time_to_first_token": {"unit": "ms", "avg": 1}, "request_count": {"avg": 5}, "error_summary": [{"count": 2}]}`)); err != nil || runs[0].HasFailed {
		t.Errorf("an error summary without a count: %v %+v", err, runs)
	}
	if _, err := ReadRuns(AIPerf, "n.json", []byte(`{"aiperf_version": "0.10.0", "request_count": {"avg": 5}, "request_latency": {"unit": "ms", "avg": 3}}`)); err == nil || !strings.Contains(err.Error(), "n.json:1:1: /time_to_first_token: missing, and no /ttft (AIPerf 0.1.x)") {
		t.Errorf("no TTFT: %v", err)
	}
}

// inference-perf's kv_cache_usage_percentage is a fraction: 0.048798 is
// 4.88 % usage, recorded as the ratio it is (as telemetry's peak is).
func TestInferencePerfKVUsage(t *testing.T) {
	m, ok := readReal(t, "inference-perf-4.json")[0].Metric("kv_cache_usage")
	if !ok || m.Value != 0.048798 || m.Unit != "ratio" {
		t.Errorf("kv_cache_usage %+v, want 0.048798 ratio", m)
	}
}
