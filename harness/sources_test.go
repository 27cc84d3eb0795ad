package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/realout"
)

// SOURCES.md's stated values, checked against the files and the readers:
// every "`/pointer` = VALUE" of a "- Pointers" paragraph, VALUE a single
// JSON scalar (a number, null, true, false or a quoted string), is the
// value at that pointer of the file's raw JSON (every line of a .jsonl
// file: SOURCES.md says a pointer applies to each line, and none of its
// values names a line), and where the pointer is one a reader maps to a
// metric, the reader's value is the file's.
//
// What is not taken, on purpose: pointers without a value; values that
// are not a single scalar ("`/error_summary` = []"); values stated in
// prose ("Every metric is 0.0: `/mean_ttft_ms`, ..." of vllm-4;
// "counts 49792 and 102048" of inference-perf-5 and -6); pointers written
// without their leading slash ("`kv_cache_usage_percentage/mean` =
// 0.042485", said of inference-perf-5 and -6 together: ambiguous); and
// values after a mention of several files at once. The Prometheus
// captures (prom/) are checked by the telemetry tests.

// knownDisagreement: "file pointer" -> why the reader and SOURCES.md (or
// the file) disagree, for disagreements found and reported, not fixed
// here. Each is logged; anything else fails.
var knownDisagreement = map[string]string{}

// srcTriple is one stated value: file, pointer (resolved), the value's
// token as SOURCES.md writes it, and the SOURCES.md line it is on.
type srcTriple struct {
	file, ptr, token string
	line             int
	relative         string // the pointer as written, when it was resolved against the one before
}

var (
	srcHeaderFileRE = regexp.MustCompile(`((?:[a-z]+-)+)(\d+)(?:\.\.(\d+))?\.(jsonl|json|csv)`)
	srcMentionRE    = regexp.MustCompile(`\b((?:sglang|vllm|aiperf|inference-perf|lmcache|dynamo)-\d+)\b(:?)`)
	srcPointerRE    = regexp.MustCompile("`(/[^`]*)`")
	srcScalarRE     = regexp.MustCompile(`^ = (-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|null|true|false|"(?:[^"\\]|\\.)*")(?:$|[\s,;)]|\.(?:$|\s))`)
)

// srcParse reads SOURCES.md's "- Pointers" paragraphs into triples. has
// says whether a file's root has a key: a one-key pointer the root lacks,
// after a longer one, is SOURCES.md's shorthand for a sibling of that one
// ("`/time_to_first_token/avg` = 230.137, `/p50` = 177.786").
func srcParse(t *testing.T, text string, has func(file, ptr string) bool) (triples []srcTriple, skipped []string) {
	t.Helper()
	var files []string // the JSON files of the current ### section
	var block strings.Builder
	blockLine := 0
	flush := func() {
		if block.Len() == 0 {
			return
		}
		s := block.String()
		block.Reset()
		cur := ""
		if len(files) == 1 {
			cur = files[0]
		}
		type ev struct {
			at             int
			mention, colon bool
			name           string
			end            int
		}
		var evs []ev
		if len(files) > 1 {
			for _, m := range srcMentionRE.FindAllStringSubmatchIndex(s, -1) {
				evs = append(evs, ev{at: m[0], mention: true, name: s[m[2]:m[3]], colon: m[5] > m[4]})
			}
		}
		for _, m := range srcPointerRE.FindAllStringSubmatchIndex(s, -1) {
			evs = append(evs, ev{at: m[0], name: s[m[2]:m[3]], end: m[1]})
		}
		slices.SortFunc(evs, func(a, b ev) int { return a.at - b.at })
		prev := ""
		for _, e := range evs {
			if e.mention {
				cur = ""
				if e.colon {
					for _, f := range files {
						if strings.TrimSuffix(strings.TrimSuffix(f, ".json"), ".jsonl") == e.name || strings.TrimSuffix(f, ".jsonl") == e.name {
							cur = f
						}
					}
				}
				prev = ""
				continue
			}
			ptr, written := e.name, ""
			if cur != "" && strings.Count(ptr, "/") == 1 && strings.Count(prev, "/") > 1 && !has(cur, ptr) {
				written, ptr = ptr, prev[:strings.LastIndex(prev, "/")]+ptr
			}
			prev = ptr
			rest := s[e.end:]
			if !strings.HasPrefix(rest, " = ") {
				continue // no value stated
			}
			m := srcScalarRE.FindStringSubmatch(rest)
			switch {
			case m == nil:
				skipped = append(skipped, fmt.Sprintf("SOURCES.md:%d: %s%.12s...: not a single JSON scalar", blockLine, e.name, rest))
			case cur == "":
				skipped = append(skipped, fmt.Sprintf("SOURCES.md:%d: %s = %s: not said of one file", blockLine, e.name, m[1]))
			default:
				triples = append(triples, srcTriple{file: cur, ptr: ptr, token: m[1], line: blockLine, relative: written})
			}
		}
	}
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if inBlock && (strings.TrimSpace(l) == "" || strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "#")) {
			flush()
			inBlock = false
		}
		switch {
		case strings.HasPrefix(l, "### "):
			files = nil
			for _, m := range srcHeaderFileRE.FindAllStringSubmatch(l, -1) {
				if m[4] == "csv" {
					continue // the pointers are the JSON's
				}
				lo, _ := strconv.Atoi(m[2])
				hi := lo
				if m[3] != "" {
					hi, _ = strconv.Atoi(m[3])
				}
				for i := lo; i <= hi; i++ {
					files = append(files, fmt.Sprintf("%s%d.%s", m[1], i, m[4]))
				}
			}
		case strings.HasPrefix(l, "#"):
			files = nil
		case strings.HasPrefix(l, "- Pointers"):
			inBlock, blockLine = true, n
			block.WriteString(l)
		case inBlock:
			block.WriteString(" " + strings.TrimSpace(l))
		}
	}
	if inBlock {
		flush()
	}
	return triples, skipped
}

// srcDoc is one JSON document of a file as encoding/json reads it, with
// the line it starts on.
type srcDoc struct {
	line int
	v    any
}

// srcRaw decodes a file with encoding/json (numbers as json.Number): a
// .jsonl file a non-empty line. A bare Infinity or NaN (sglang-2, -3, -4
// have "request_rate": Infinity) is not JSON: tolerant, the readers' own
// rewriting, turns it into a string first, and a stated value is never
// at such a place (checked: the value read would be that string).
func srcRaw(t *testing.T, file string) []srcDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realout.Dir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := tolerant(b)
	decode := func(p []byte, line int) srcDoc {
		dec := json.NewDecoder(bytes.NewReader(p))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s:%d: %v", file, line, err)
		}
		return srcDoc{line, v}
	}
	if !strings.HasSuffix(file, ".jsonl") {
		return []srcDoc{decode(src, 1)}
	}
	var docs []srcDoc
	for i, l := range bytes.Split(src, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			docs = append(docs, decode(l, i+1))
		}
	}
	return docs
}

// srcAt follows an RFC 6901 pointer through objects and arrays.
func srcAt(v any, ptr string) (any, bool) {
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// srcEqual says whether the raw value is the stated token: null, a
// boolean and a string exactly; a number exactly as float64, or else
// rounded to the stated decimals (SOURCES.md rounds: 2343.22 for the
// file's 2343.2199...), which rounded reports.
func srcEqual(raw any, token string) (ok, rounded bool) {
	switch {
	case token == "null":
		return raw == nil, false
	case token == "true" || token == "false":
		b, isBool := raw.(bool)
		return isBool && strconv.FormatBool(b) == token, false
	case strings.HasPrefix(token, `"`):
		var want string
		if err := json.Unmarshal([]byte(token), &want); err != nil {
			return false, false
		}
		s, isStr := raw.(string)
		return isStr && s == want, false
	}
	n, isNum := raw.(json.Number)
	if !isNum {
		return false, false
	}
	got, err1 := n.Float64()
	want, err2 := strconv.ParseFloat(token, 64)
	if err1 != nil || err2 != nil {
		return false, false
	}
	if got == want {
		return true, false
	}
	decimals := 0
	if i := strings.IndexByte(token, '.'); i >= 0 && !strings.ContainsAny(token, "eE") {
		decimals = len(token) - i - 1
	}
	return strconv.FormatFloat(got, 'f', decimals, 64) == strconv.FormatFloat(want, 'f', decimals, 64), true
}

// srcMetric is where a reader puts the value at a pointer: a metric's
// name and the factor from the file's unit (seconds to ms), and for the
// counts the Run's own fields too. ok is false for pointers no reader
// maps (num_prompts, input_tokens_per_sec, ...). Written out here, not
// taken from the readers' tables, so a table's mistake shows.
type srcMetric struct {
	name  string
	scale float64
	field func(Run) (float64, bool)
}

var srcBenchLatencyRE = regexp.MustCompile(`^/(mean|median|std|p[0-9]+)_(ttft|tpot|itl|e2el|e2e_latency)_ms$`)

func srcMetricFor(format, ptr string) (srcMetric, bool) {
	completed := func(r Run) (float64, bool) { return r.Completed, true }
	failed := func(r Run) (float64, bool) { return r.Failed, r.HasFailed }
	stat := map[string]string{"mean": "mean", "avg": "mean", "median": "p50", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "std": "std"}
	switch format {
	case VLLMBench, SGLangBench:
		if m := srcBenchLatencyRE.FindStringSubmatch(ptr); m != nil {
			metric := map[string]string{"e2e_latency": "e2el"}[m[2]]
			if metric == "" {
				metric = m[2]
			}
			s := stat[m[1]]
			if s == "" {
				s = m[1]
			}
			return srcMetric{name: metric + "_" + s + "_ms", scale: 1}, true
		}
		switch ptr {
		case "/completed":
			return srcMetric{"completed", 1, completed}, true
		case "/failed":
			return srcMetric{"failed", 1, failed}, true
		case "/duration":
			return srcMetric{"duration_s", 1, nil}, true
		case "/request_throughput":
			return srcMetric{"requests_per_s", 1, nil}, true
		case "/request_goodput":
			return srcMetric{"goodput_requests_per_s", 1, nil}, true
		case "/output_throughput":
			return srcMetric{"output_tokens_per_s", 1, nil}, true
		case "/total_token_throughput", "/total_throughput":
			return srcMetric{"total_tokens_per_s", 1, nil}, true
		case "/input_throughput":
			return srcMetric{"input_tokens_per_s", 1, nil}, true
		case "/max_concurrency":
			return srcMetric{"", 1, func(r Run) (float64, bool) { return r.MaxConcurrency, true }}, true
		}
	case AIPerf:
		p := strings.TrimPrefix(ptr, "/records")
		for src, metric := range map[string]string{"time_to_first_token": "ttft", "ttft": "ttft", "inter_token_latency": "itl", "request_latency": "e2el", "time_to_second_token": "ttst", "ttst": "ttst"} {
			if rest, ok := strings.CutPrefix(p, "/"+src+"/"); ok && stat[rest] != "" {
				return srcMetric{name: metric + "_" + stat[rest] + "_ms", scale: 1}, true // the files' unit is ms (checked by the reader's golden)
			}
		}
		switch p {
		case "/output_token_throughput/avg":
			return srcMetric{"output_tokens_per_s", 1, nil}, true
		case "/request_throughput/avg":
			return srcMetric{"requests_per_s", 1, nil}, true
		case "/total_token_throughput/avg":
			return srcMetric{"total_tokens_per_s", 1, nil}, true
		case "/request_count/avg":
			return srcMetric{"completed", 1, completed}, true
		case "/error_request_count/avg":
			return srcMetric{"failed", 1, failed}, true
		}
	case InferencePerf, InferencePerfPrometheus:
		base := "/successes/latency/"
		if format == InferencePerfPrometheus {
			base = "/successes/"
		}
		for src, metric := range map[string]string{"time_to_first_token": "ttft", "time_per_output_token": "tpot", "inter_token_latency": "itl", "request_latency": "e2el"} {
			if format == InferencePerfPrometheus && metric == "itl" {
				continue
			}
			if rest, ok := strings.CutPrefix(ptr, base+src+"/"); ok && stat[rest] != "" {
				return srcMetric{name: metric + "_" + stat[rest] + "_ms", scale: 1000}, true // seconds
			}
		}
		switch ptr {
		case "/successes/count":
			return srcMetric{"completed", 1, completed}, true
		case "/failures/count":
			return srcMetric{"failed", 1, failed}, true
		}
		if format == InferencePerf {
			switch ptr {
			case "/successes/throughput/output_tokens_per_sec":
				return srcMetric{"output_tokens_per_s", 1, nil}, true
			case "/successes/throughput/total_tokens_per_sec":
				return srcMetric{"total_tokens_per_s", 1, nil}, true
			case "/successes/throughput/requests_per_sec":
				return srcMetric{"requests_per_s", 1, nil}, true
			}
		} else {
			switch ptr {
			case "/successes/output_len/rate":
				return srcMetric{"output_tokens_per_s", 1, nil}, true
			case "/successes/rate":
				return srcMetric{"requests_per_s", 1, nil}, true
			case "/successes/prefix_cache_hit_percent/mean":
				return srcMetric{"prefix_cache_hit_percent", 1, nil}, true
			case "/successes/kv_cache_usage_percentage/mean":
				return srcMetric{"kv_cache_usage", 1, nil}, true // a 0-1 fraction, recorded as the ratio it is
			}
		}
	}
	return srcMetric{}, false
}

func TestSourcesPointers(t *testing.T) {
	dir := realout.Dir(t)
	text, err := os.ReadFile(filepath.Join(dir, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	raws := map[string][]srcDoc{}
	raw := func(file string) []srcDoc {
		if _, ok := raws[file]; !ok {
			raws[file] = srcRaw(t, file)
		}
		return raws[file]
	}
	has := func(file, ptr string) bool {
		for _, d := range raw(file) {
			if _, ok := srcAt(d.v, ptr); !ok {
				return false
			}
		}
		return true
	}
	triples, skipped := srcParse(t, string(text), has)
	for _, s := range skipped {
		t.Logf("not taken: %s", s)
	}
	if len(triples) < 50 {
		t.Fatalf("SOURCES.md: %d stated values read, expected more than 50: has its layout changed?", len(triples))
	}

	// The sets repeat sections: a value stated twice is checked once,
	// and stated twice differently is an error of SOURCES.md.
	seen := map[string]srcTriple{}
	rawChecked, readerChecked, rounded := map[string]int{}, map[string]int{}, map[string]int{}
	for _, tr := range triples {
		key := tr.file + " " + tr.ptr
		if s, ok := seen[key]; ok {
			if s.token != tr.token {
				t.Errorf("SOURCES.md:%d and :%d: %s %s = %s and %s", s.line, tr.line, tr.file, tr.ptr, s.token, tr.token)
			}
			continue
		}
		seen[key] = tr
		if tr.relative != "" {
			t.Logf("SOURCES.md:%d: %s: %s read as %s", tr.line, tr.file, tr.relative, tr.ptr)
		}
		docs := raw(tr.file)
		format, read := realFiles[tr.file]
		var runs []Run
		if read {
			runs = readReal(t, tr.file)
		}
		for _, d := range docs {
			where := fmt.Sprintf("%s:%d %s (SOURCES.md:%d)", tr.file, d.line, tr.ptr, tr.line)
			v, ok := srcAt(d.v, tr.ptr)
			if !ok {
				t.Errorf("%s: not in the file; SOURCES.md says = %s", where, tr.token)
				continue
			}
			if s, isStr := v.(string); isStr && (s == strings.Trim(posInf, `"`) || s == strings.Trim(negInf, `"`) || s == strings.Trim(nan, `"`)) {
				t.Logf("%s: a bare Infinity or NaN (or the file's own %q), not compared with %s", where, s, tr.token)
				continue
			}
			eq, round := srcEqual(v, tr.token)
			if !eq {
				t.Errorf("%s = %v, SOURCES.md says %s", where, v, tr.token)
				continue
			}
			rawChecked[tr.file]++
			if round {
				rounded[tr.file]++
			}
			m, mapped := srcMetricFor(format, tr.ptr)
			if !read || !mapped {
				continue
			}
			i := slices.IndexFunc(runs, func(r Run) bool { return r.Line == d.line })
			if i < 0 {
				t.Errorf("%s: the reader has no run of line %d", where, d.line)
				continue
			}
			r := runs[i]
			var fileVal float64
			if v != nil {
				fileVal, _ = v.(json.Number).Float64()
			}
			var bad []string
			if m.name != "" {
				got, present := r.Metric(m.name)
				switch {
				case v == nil && present:
					bad = append(bad, fmt.Sprintf("the reader has %s = %v, the file null", m.name, got.Value))
				case v != nil && !present:
					bad = append(bad, fmt.Sprintf("the reader has no %s, the file %v", m.name, v))
				case v != nil && got.Value != fileVal*m.scale:
					bad = append(bad, fmt.Sprintf("the reader's %s = %v, the file's %v (x%v = %v)", m.name, got.Value, v, m.scale, fileVal*m.scale))
				}
			}
			if m.field != nil && v != nil {
				if got, present := m.field(r); !present || got != fileVal*m.scale {
					bad = append(bad, fmt.Sprintf("the reader's Run field = %v (set: %v), the file's %v", got, present, v))
				}
			}
			if len(bad) > 0 {
				if why, known := knownDisagreement[tr.file+" "+tr.ptr]; known {
					t.Logf("%s: known disagreement (%s): %s", where, why, strings.Join(bad, "; "))
				} else {
					t.Errorf("%s: %s", where, strings.Join(bad, "; "))
				}
				continue
			}
			readerChecked[tr.file]++
		}
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var none []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == "SOURCES.md" {
			continue
		}
		if rawChecked[name] == 0 {
			none = append(none, name)
			continue
		}
		t.Logf("%s: %d stated values checked in the file (%d of them to SOURCES.md's rounding only), %d against the reader", name, rawChecked[name], rounded[name], readerChecked[name])
	}
	t.Logf("no stated value: %s", strings.Join(none, ", "))
}
