package harness

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// The latency statistics of vLLM's and SGLang's serving benchmarks:
// STAT_METRIC_ms, STAT one of mean, median, std or pNN, METRIC one of
// ttft, tpot, itl, e2el (vLLM) or e2e_latency (SGLang).
var latencyKeyRE = regexp.MustCompile(`^(mean|median|std|p[0-9]+(?:\.[0-9]+)?)_(ttft|tpot|itl|e2el|e2e_latency)_ms$`)

// throughputs: source key -> metric name (both tools; SGLang's total is
// total_throughput, vLLM's total_token_throughput).
var benchThroughputs = map[string]string{
	"output_throughput":      "output_tokens_per_s",
	"total_token_throughput": "total_tokens_per_s",
	"total_throughput":       "total_tokens_per_s",
	"input_throughput":       "input_tokens_per_s",
}

// readBenchServe reads one result of vLLM's bench serve or SGLang's
// bench_serving: they share their key names.
func readBenchServe(d doc, r *Run) error {
	if err := shape(d, VLLMBench); err != nil {
		return err
	}
	for k := range d.root {
		m := latencyKeyRE.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		v, ok, err := d.number("/" + k)
		if err != nil {
			return err
		}
		if ok {
			r.add(latencyName(m[2], m[1]), v, ms, lower)
		}
	}
	for k, name := range benchThroughputs {
		v, ok, err := d.number("/" + k)
		if err != nil {
			return err
		}
		if ok {
			r.add(name, v, tokPerS, higher)
		}
	}
	if err := benchCounts(d, r); err != nil {
		return err
	}
	return benchRun(d, r)
}

// latencyName is the convention's name: ttft_p50_ms for median_ttft_ms.
func latencyName(metric, stat string) string {
	if metric == "e2e_latency" {
		metric = "e2el"
	}
	if stat == "median" {
		stat = "p50"
	}
	return metric + "_" + stat + "_ms"
}

// benchCounts reads completed, failed, duration and the request rate
// achieved, deriving what an older version leaves out.
func benchCounts(d doc, r *Run) error {
	completed, hasCompleted, err := d.number("/completed")
	if err != nil {
		return err
	}
	if !hasCompleted {
		return fmt.Errorf("%s: /completed: missing (every version of the tool writes it; is this a %s file?)", d.pos(d.at[""]), "bench serve")
	}
	r.Completed = completed
	r.add("completed", completed, count, higher)
	failed, hasFailed, err := d.number("/failed")
	if err != nil {
		return err
	}
	prompts, hasPrompts, err := d.number("/num_prompts")
	if err != nil {
		return err
	}
	if !hasFailed && hasPrompts {
		failed, hasFailed = prompts-completed, true
		r.Notes = append(r.Notes, "failed = num_prompts - completed (the file has no failed count)")
	}
	if hasFailed {
		r.Failed, r.HasFailed = failed, true
		r.add("failed", failed, count, lower)
	}
	duration, hasDuration, err := d.number("/duration")
	if err != nil {
		return err
	}
	if hasDuration {
		r.add("duration_s", duration, seconds, "")
	}
	rps, ok, err := d.number("/request_throughput")
	if err != nil {
		return err
	}
	switch {
	case ok:
		r.add("requests_per_s", rps, reqPerS, higher)
	case hasDuration && duration > 0:
		r.add("requests_per_s", completed/duration, reqPerS, higher)
		r.Notes = append(r.Notes, "requests_per_s = completed / duration (the file has no request_throughput)")
	}
	// vLLM of spring 2025 wrote the key with a trailing colon.
	for _, k := range []string{"request_goodput", "request_goodput:"} {
		v, ok, err := d.number("/" + jsonscan.EscapePointer(k))
		if err != nil {
			return err
		}
		if ok {
			r.add("goodput_requests_per_s", v, reqPerS, higher)
			if strings.HasSuffix(k, ":") {
				r.Notes = append(r.Notes, `goodput read from the misspelled key "request_goodput:"`)
			}
		}
	}
	return nil
}

// benchRun reads what tells runs apart: tag (SGLang --tag; vLLM --label,
// or the "framework" of --metadata), request rate, concurrency.
func benchRun(d doc, r *Run) error {
	for _, k := range []string{"/tag", "/label", "/framework"} {
		t, err := d.text(k)
		if err != nil {
			return err
		}
		if t != "" {
			r.Tag = t
			break
		}
	}
	rate, ok, err := d.rate("/request_rate")
	if err != nil {
		return err
	}
	r.RequestRate, r.HasRequestRate = rate, ok
	c, _, err := d.number("/max_concurrency")
	r.MaxConcurrency = c
	return err
}
