package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/internal/testing/realout"
	"github.com/kvsweep/kvsweep/matrix"
)

// realout.Dir holds real files of the clients, copied byte for byte
// from public repositories (SOURCES.md there says from where).

var realFiles = map[string]string{
	"vllm-1.json":           VLLMBench,
	"vllm-2.jsonl":          VLLMBench,
	"vllm-4.json":           VLLMBench,
	"vllm-5.json":           VLLMBench,
	"sglang-1.jsonl":        SGLangBench,
	"sglang-2.jsonl":        SGLangBench,
	"sglang-3.jsonl":        SGLangBench,
	"inference-perf-1.json": InferencePerf,
	"inference-perf-2.json": InferencePerfPrometheus,
	"vllm-3.json":           VLLMBench,
	"sglang-4.json":         SGLangBench,
	"sglang-5.json":         SGLangBench,
	"sglang-6.json":         SGLangBench,
	"aiperf-1.json":         AIPerf,
	"aiperf-2.json":         AIPerf,
	"aiperf-3.json":         AIPerf,
	"aiperf-4.json":         AIPerf,
	"inference-perf-3.json": InferencePerf,
	"inference-perf-4.json": InferencePerfPrometheus,
	"inference-perf-5.json": InferencePerf,
	"inference-perf-6.json": InferencePerfPrometheus,
}

func readReal(t *testing.T, file string) []Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realout.Dir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ReadRuns(realFiles[file], file, b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return runs
}

// Every real file reads, and what it maps to is the golden: each run's
// line, what tells it apart, its counts and its metrics in the
// convention's names and units.
func TestRealFiles(t *testing.T) {
	for file := range realFiles {
		t.Run(file, func(t *testing.T) {
			var b strings.Builder
			for _, r := range readReal(t, file) {
				rate, failed := "not given", "not given"
				if r.HasRequestRate {
					rate = fmt.Sprint(r.RequestRate)
				}
				if r.HasFailed {
					failed = fmt.Sprint(r.Failed)
				}
				fmt.Fprintf(&b, "line %d: tag %q, request rate %s, max concurrency %v, completed %v, failed %s\n",
					r.Line, r.Tag, rate, r.MaxConcurrency, r.Completed, failed)
				for _, n := range r.Notes {
					fmt.Fprintf(&b, "  note: %s\n", n)
				}
				for _, m := range r.Metrics {
					fmt.Fprintf(&b, "  %s = %.6g %s %s\n", m.Name, m.Value, m.Unit, m.Direction)
				}
			}
			golden.Check(t, filepath.Join("testdata", "golden", file+".golden"), []byte(b.String()))
		})
	}
}

// Each quirk the files have, read as the tool meant it.
func TestQuirks(t *testing.T) {
	// A bare Infinity token (SGLang writes Python's json).
	for _, r := range readReal(t, "sglang-2.jsonl") {
		if !r.HasRequestRate || !math.IsInf(r.RequestRate, 1) {
			t.Errorf("sglang-2: request_rate %v, want +Inf from the bare Infinity", r.RequestRate)
		}
	}
	// "inf" as a string (vLLM).
	if r := readReal(t, "vllm-1.json")[0]; !math.IsInf(r.RequestRate, 1) {
		t.Errorf(`vllm-1: request_rate %v, want +Inf from "inf"`, r.RequestRate)
	}
	// The misspelled "request_goodput:" is read (vllm-2), and no line
	// has a failed key: it is derived from num_prompts.
	runs := readReal(t, "vllm-2.jsonl")
	if len(runs) != 12 {
		t.Fatalf("vllm-2: %d runs, want 12", len(runs))
	}
	for _, i := range []int{5, 11} { // lines 6 and 12 completed 1015 of 2000
		if runs[i].Completed != 1015 || runs[i].Failed != 985 || !runs[i].HasFailed {
			t.Errorf("vllm-2 line %d: completed %v failed %v, want 1015 and 985 derived", runs[i].Line, runs[i].Completed, runs[i].Failed)
		}
	}
	// Where the misspelled key holds a value, it is the goodput.
	if runs, err := ReadRuns(VLLMBench, "g.json", []byte(`{"completed": 4, "request_goodput:": 2.5}`)); err != nil {
		t.Error(err)
	} else if m, ok := runs[0].Metric("goodput_requests_per_s"); !ok || m.Value != 2.5 || !strings.Contains(strings.Join(runs[0].Notes, ";"), `"request_goodput:"`) {
		t.Errorf("the misspelled goodput: %v %v", m, runs[0].Notes)
	}
	// Old SGLang lines lack the mean TTFT, p99s and request throughput:
	// left out (requests_per_s derived), never zero.
	for _, r := range readReal(t, "sglang-1.jsonl") {
		if _, ok := r.Metric("ttft_mean_ms"); ok {
			t.Errorf("sglang-1 line %d: a ttft_mean_ms the file does not have", r.Line)
		}
		if m, ok := r.Metric("requests_per_s"); !ok || m.Value <= 0 {
			t.Errorf("sglang-1 line %d: requests_per_s %v, want completed/duration", r.Line, m)
		}
		if r.HasFailed {
			t.Errorf("sglang-1 line %d: a failed count the file does not have", r.Line)
		}
	}
	// Seconds become milliseconds (inference-perf).
	if m, ok := readReal(t, "inference-perf-2.json")[0].Metric("ttft_p99_ms"); !ok || math.Abs(m.Value-161.094) > 1e-9 {
		t.Errorf("inference-perf-2: ttft_p99_ms %v, want 161.094 (0.161094 s)", m)
	}
}

// A run where every request failed (vllm-4: a full file of zeros, exit
// 0) is a FAIL saying so, never a PASS with zeros; one that completed
// requests is a PASS for the rules to judge.
func TestNoVerdictFromZeros(t *testing.T) {
	res, err := Cases(readReal(t, "vllm-4.json"), []string{"TC-01"}, Mapping{}, "vllm-4.json")
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cases[0]; c.Verdict != "FAIL" || !strings.Contains(c.Message, "completed no request: all 8 failed") {
		t.Errorf("every request failed: %s %q", c.Verdict, c.Message)
	}
	res, err = Cases(readReal(t, "vllm-1.json"), []string{"TC-01"}, Mapping{}, "vllm-1.json")
	if err != nil || res.Cases[0].Verdict != "PASS" {
		t.Errorf("a completed run: %v %+v", err, res)
	}
}

// Runs of a JSONL file matched to cases by tag, rate, concurrency or
// line, and every way that fails named with its line.
func TestCases(t *testing.T) {
	sg := readReal(t, "sglang-1.jsonl") // request rates 1, 2, 4, ...
	res, err := Cases(sg[:2], []string{"TC-01", "TC-02"}, Mapping{By: ByRequestRate, Values: map[string]string{"TC-01": "2", "TC-02": "1"}}, "sglang-1.jsonl")
	if err != nil || res.Cases[0].ID != "TC-01" {
		t.Fatal(err)
	}
	if m, _ := sg[1].Metric("completed"); res.Cases[0].Metrics[0] != m {
		t.Errorf("TC-01 (rate 2) got %v, want line 2's", res.Cases[0].Metrics[0])
	}
	vl := readReal(t, "vllm-2.jsonl") // tags vllm and sgl, six each
	for _, c := range []struct {
		name string
		runs []Run
		ids  []string
		m    Mapping
		want string
	}{
		{"vllm-2.jsonl", vl, []string{"vllm"}, Mapping{By: ByTag}, "vllm-2.jsonl:1 and line 2: two runs match case vllm"},
		{"vllm-2.jsonl", vl[:1], []string{"TC-01", "TC-02"}, Mapping{}, "vllm-2.jsonl: 1 runs for 2 cases (TC-01, TC-02): matched by line, each case needs its line"},
		{"vllm-2.jsonl", vl[6:7], []string{"vllm"}, Mapping{By: ByTag}, "vllm-2.jsonl: no run matches case vllm"},
		{"sglang-1.jsonl", sg, []string{"TC-01"}, Mapping{By: ByRequestRate, Values: map[string]string{"TC-01": "3"}}, "sglang-1.jsonl: no run matches case TC-01"},
		{"sglang-1.jsonl", sg[:2], []string{"TC-01"}, Mapping{By: ByRequestRate, Values: map[string]string{"TC-01": "1"}}, "sglang-1.jsonl:2: a run no case matches (by request_rate"},
		{"sglang-1.jsonl", sg[:1], []string{"TC-01"}, Mapping{By: "rate"}, `unknown case_by "rate"`},
		{"sglang-1.jsonl", sg, []string{"TC-01"}, Mapping{By: ByTag}, "sglang-1.jsonl:1: case_by tag, but no run of the file has a tag: SGLang's bench_serving writes tag only after 0.5.3.post2 and only with --tag, vLLM's bench serve label with --label or framework with --metadata; match the runs by case_by: line, request_rate or max_concurrency instead"},
	} {
		if _, err := Cases(c.runs, c.ids, c.m, c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v by %s: %v, want %q", c.ids, c.m.By, err, c.want)
		}
	}
}

// What is refused, and where it says.
func TestRefusals(t *testing.T) {
	for _, c := range []struct{ format, src, want string }{
		{VLLMBench, "{\"completed\": 8,\n \"mean_ttft_ms\": \"fast\"}", `f.json:2:18: /mean_ttft_ms: expected a number, got the string "fast"`},
		{VLLMBench, "{\"completed\": 8, \"mean_ttft_ms\": Infinity}", "f.json:1:34: /mean_ttft_ms: expected a number, got an infinity"},
		{SGLangBench, "{\"completed\": 1}\n{\"completed\": 2, \"dura", "f.json:2:"},
		{VLLMBench, `{"mean_ttft_ms": 1}`, "/completed: missing"},
		{VLLMBench, `[1, 2]`, "expected a JSON object, got an array"},
		{AIPerf, `{"time_to_first_token": {"unit": "fortnights", "avg": 1}, "request_count": {"avg": 1}}`, `unknown latency unit "fortnights"`},
		{InferencePerf, `{"successes": {"latency": {"time_to_first_token": 3}, "count": 1}}`, "/successes/latency/time_to_first_token: expected an object of statistics, got a number"},
		{"genai", `{}`, `unknown format "genai"`},
	} {
		if _, err := ReadRuns(c.format, "f.json", []byte(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want %q", c.format, c.src, err, c.want)
		}
	}
}

// AIPerf's export (genai-perf's has the same shape): statistics objects
// with their units, a metric a key.
func TestAIPerf(t *testing.T) {
	src := `{"records": {
  "time_to_first_token": {"unit": "ms", "avg": 120.5, "p50": 110.0, "p99": 400.25, "std": 20.0, "min": 80.0},
  "inter_token_latency": {"unit": "ns", "avg": 9000000, "p99": 12000000},
  "request_latency": {"unit": "ms", "avg": 900.0},
  "output_token_throughput": {"unit": "tokens/sec", "avg": 1500.5},
  "request_throughput": {"unit": "requests/sec", "avg": 3.25},
  "request_count": {"unit": "requests", "avg": 200},
  "error_request_count": {"unit": "requests", "avg": 2}
}}`
	runs, err := ReadRuns(AIPerf, "profile_export_aiperf.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"ttft_mean_ms": 120.5, "ttft_p50_ms": 110, "ttft_p99_ms": 400.25, "ttft_std_ms": 20, "itl_mean_ms": 9, "itl_p99_ms": 12,
		"e2el_mean_ms": 900, "output_tokens_per_s": 1500.5, "requests_per_s": 3.25, "completed": 200, "failed": 2}
	for n, v := range want {
		if m, ok := runs[0].Metric(n); !ok || math.Abs(m.Value-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", n, m.Value, v)
		}
	}
	if len(runs[0].Metrics) != len(want) {
		t.Errorf("%d metrics, want %d: %+v", len(runs[0].Metrics), len(want), runs[0].Metrics)
	}
}

// The readers against their own decoding: whatever the bytes, Read
// returns runs or an error, never panics, and a number it reports is a
// number encoding/json reads at that key.
func FuzzRead(f *testing.F) {
	dir := realout.Dir(f)
	for file, format := range realFiles {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(format, b)
	}
	f.Add(VLLMBench, []byte(`{"completed": 1, "request_rate": Infinity, "p99_ttft_ms": -Infinity}`))
	f.Fuzz(func(t *testing.T, format string, b []byte) {
		runs, err := ReadRuns(format, "fuzz.json", b)
		if err != nil {
			return
		}
		if format != VLLMBench || len(runs) != 1 {
			return
		}
		var doc map[string]any
		if json.Unmarshal(b, &doc) != nil {
			return
		}
		if v, ok := doc["completed"].(float64); ok && v != runs[0].Completed {
			t.Errorf("completed %v, encoding/json reads %v", runs[0].Completed, v)
		}
		if v, ok := doc["p99_ttft_ms"].(float64); ok {
			if m, _ := runs[0].Metric("ttft_p99_ms"); m.Value != v {
				t.Errorf("ttft_p99_ms %v, encoding/json reads %v", m.Value, v)
			}
		}
	})
}

// The spec accepts what this package reads.
func TestSpecLists(t *testing.T) {
	if !slices.Equal(matrix.ClientFormats, Formats) || !slices.Equal(matrix.ClientCaseBys, CaseBys) {
		t.Errorf("matrix lists %v %v, harness reads %v %v", matrix.ClientFormats, matrix.ClientCaseBys, Formats, CaseBys)
	}
}
