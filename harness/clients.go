package harness

// The files standard LLM-serving benchmark clients write -- vLLM's "bench
// serve --save-result" (benchmark_serving.py), SGLang's "bench_serving
// --output-file", AIPerf's (and genai-perf's) profile export,
// inference-perf's client and Prometheus reports -- are read into
// benchmark runs with one naming and unit convention: latencies in ms
// (ttft_p99_ms), throughputs per second (output_tokens_per_s,
// requests_per_s), counts (completed, failed). Each format's reader is
// in a file of its own; docs/results.md has the table of each format's
// source keys.
//
// The files are read as the tools wrote them, quirks included: a bare
// Infinity token and the string "inf" are +Inf where a field allows it
// (a request rate), a misspelled key is read under both spellings, a key
// a version lacks is left out, never zero, and a value of the wrong type
// is refused with its line, column and key. They carry no verdict: see
// Cases.

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
	"github.com/kvsweep/kvsweep/result"
)

// The formats ReadRuns knows.
const (
	VLLMBench               = "vllm-bench"
	SGLangBench             = "sglang-bench"
	AIPerf                  = "aiperf"
	InferencePerf           = "inference-perf"
	InferencePerfPrometheus = "inference-perf-prometheus"
)

// Formats lists them, for messages and the spec's checks.
var Formats = []string{VLLMBench, SGLangBench, AIPerf, InferencePerf, InferencePerfPrometheus}

// Run is one benchmark run of a file: the document, or one line of a
// JSONL file.
type Run struct {
	Line int // the line it starts on (1 for a whole-file document)
	// What a run is told apart by, where the file says: the tag
	// (--tag, --label or metadata), the request rate (+Inf for "as fast
	// as possible") and the concurrency limit (0: none).
	Tag            string
	RequestRate    float64
	HasRequestRate bool
	MaxConcurrency float64
	// Completed and Failed are the requests that finished and failed;
	// HasFailed is false where the format has no failed count and none
	// can be derived.
	Completed, Failed float64
	HasFailed         bool
	Metrics           []result.Metric // sorted by name
	// Notes says what was derived or read from a quirk, for people.
	Notes []string
}

// Metric returns the run's metric name.
func (r *Run) Metric(name string) (result.Metric, bool) {
	i, ok := slices.BinarySearchFunc(r.Metrics, name, func(m result.Metric, n string) int { return cmp.Compare(m.Name, n) })
	if !ok {
		return result.Metric{}, false
	}
	return r.Metrics[i], true
}

func (r *Run) add(name string, v float64, unit, direction string) {
	r.Metrics = append(r.Metrics, result.Metric{Name: name, Value: v, Unit: unit, Direction: direction})
}

func (r *Run) sort() {
	slices.SortFunc(r.Metrics, func(a, b result.Metric) int { return cmp.Compare(a.Name, b.Name) })
	r.Metrics = slices.CompactFunc(r.Metrics, func(a, b result.Metric) bool { return a.Name == b.Name })
}

// The bounds of a file ReadRuns takes: the files are written by tools a
// pull request can change, and they are read on the machine that
// collects. The tools nest five levels at most (SGLang's server_info).
const (
	MaxDepth = jsonscan.MaxDepth // levels of objects and arrays
	MaxSize  = 64 << 20          // bytes
)

// ReadRuns reads a file of the given format; name says where in errors. A
// file past MaxSize or nested past MaxDepth is refused before it is
// decoded, so what reading costs stays linear in the file.
func ReadRuns(format, name string, b []byte) ([]Run, error) {
	read, ok := readers[format]
	if !ok {
		return nil, fmt.Errorf("unknown format %q (expected one of %s)", format, strings.Join(Formats, ", "))
	}
	if err := jsonscan.Bound(b, MaxDepth, MaxSize); err != nil {
		return nil, fmt.Errorf("%s:%v", name, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s:1:1: the file is empty (%d bytes, no JSON): the tool wrote no result", name, len(b))
	}
	if err := notJSON(name, b); err != nil {
		return nil, err
	}
	docs, err := documents(name, b, format == VLLMBench || format == SGLangBench)
	if err != nil {
		return nil, err
	}
	runs := make([]Run, 0, len(docs))
	for _, d := range docs {
		r := Run{Line: d.line}
		if err := read(d, &r); err != nil {
			return nil, err
		}
		r.sort()
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no run in the file", name)
	}
	return runs, nil
}

var readers = map[string]func(doc, *Run) error{
	VLLMBench:               readBenchServe,
	SGLangBench:             readSGLangBench,
	AIPerf:                  readAIPerf,
	InferencePerf:           readInferencePerf,
	InferencePerfPrometheus: readInferencePerfPrometheus,
}

// Units and directions of the convention.
const (
	ms      = "ms"
	tokPerS = "tok/s"
	reqPerS = "req/s"
	count   = "requests"
	seconds = "s"
	percent = "%"
	ratio   = "ratio"
	lower   = "lower"
	higher  = "higher"
)
