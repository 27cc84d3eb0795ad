package harness

import (
	"math"
	"strings"
	"testing"
)

// hostile is one file and what reading it must give: the error, in full
// (name:line:col first), or the run's value read by get.
type hostile struct {
	name, format, src string
	err               string
	get               func(Run) any
	want              any
}

func (c hostile) check(t *testing.T) {
	t.Helper()
	runs, err := ReadRuns(c.format, "h.json", []byte(c.src))
	switch {
	case c.err != "":
		if err == nil || err.Error() != c.err {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.err)
		}
	case err != nil:
		t.Errorf("%s: %v, want %v", c.name, err, c.want)
	default:
		got := c.get(runs[len(runs)-1])
		if f, ok := got.(float64); ok && math.IsInf(f, 0) {
			if w, ok := c.want.(float64); ok && f == w {
				return
			}
		}
		if got != c.want {
			t.Errorf("%s: read %v, want %v", c.name, got, c.want)
		}
	}
}

func metric(name string) func(Run) any {
	return func(r Run) any {
		m, ok := r.Metric(name)
		if !ok {
			return "missing"
		}
		return m.Value
	}
}

func tag(r Run) any       { return r.Tag }
func rateOf(r Run) any    { return r.RequestRate }
func completed(r Run) any { return r.Completed }

// NaN and Infinity wherever they can be: a bare token where a number
// goes is refused with its place (a request rate alone takes +Infinity,
// as SGLang writes it); in a string it is that string; in a key's place
// the file is refused; where nothing reads it, it is passed over.
func TestNaNInfinityPlaces(t *testing.T) {
	for _, c := range []hostile{
		{name: "NaN as a latency", format: VLLMBench, src: `{"completed": 8, "mean_ttft_ms": NaN}`,
			err: "h.json:1:34: /mean_ttft_ms: expected a number, got NaN"},
		{name: "-Infinity as a latency", format: SGLangBench, src: "{\"completed\": 8,\n  \"p99_ttft_ms\": -Infinity}",
			err: "h.json:2:18: /p99_ttft_ms: expected a number, got an infinity"},
		{name: "Infinity as the count", format: VLLMBench, src: `{"completed": Infinity}`,
			err: "h.json:1:15: /completed: expected a number, got an infinity"},
		{name: "Infinity as the request rate", format: SGLangBench, src: `{"completed": 8, "request_rate": Infinity}`,
			get: rateOf, want: math.Inf(1)},
		{name: "-Infinity as the request rate", format: SGLangBench, src: `{"completed": 8, "request_rate": -Infinity}`,
			err: "h.json:1:34: /request_rate: expected a number, got an infinity"},
		{name: "NaN as the request rate", format: VLLMBench, src: `{"completed": 8, "request_rate": NaN}`,
			err: "h.json:1:34: /request_rate: expected a number, got NaN"},
		{name: "Infinity where a string goes", format: SGLangBench, src: `{"completed": 8, "tag": Infinity}`,
			err: "h.json:1:25: /tag: expected a string, got an infinity"},
		{name: "NaN as an AIPerf statistic", format: AIPerf, src: `{"request_count": {"avg": 4}, "time_to_first_token": {"unit": "ms", "avg": NaN}}`,
			err: "h.json:1:76: /time_to_first_token/avg: expected a number, got NaN"},
		{name: "Infinity as an inference-perf statistic", format: InferencePerf, src: `{"successes": {"count": 4, "latency": {"time_to_first_token": {"mean": Infinity}}}}`,
			err: "h.json:1:72: /successes/latency/time_to_first_token/mean: expected a number, got an infinity"},
		{name: "NaN on line 2 of JSONL", format: SGLangBench, src: "{\"completed\": 1}\n{\"completed\": 2, \"median_itl_ms\": NaN}\n",
			err: "h.json:2:35: /median_itl_ms: expected a number, got NaN"},
		// In strings: the strings they are.
		{name: `"NaN" as a tag`, format: SGLangBench, src: `{"completed": 8, "tag": "NaN"}`, get: tag, want: "NaN"},
		{name: `"Infinity" as a tag`, format: SGLangBench, src: `{"completed": 8, "tag": "Infinity"}`, get: tag, want: "Infinity"},
		{name: `"NaN" as a latency`, format: VLLMBench, src: `{"completed": 8, "mean_ttft_ms": "NaN"}`,
			err: `h.json:1:34: /mean_ttft_ms: expected a number, got the string "NaN"`},
		{name: `"Infinity" as the request rate`, format: VLLMBench, src: `{"completed": 8, "request_rate": "Infinity"}`, get: rateOf, want: math.Inf(1)},
		// The reader's own stand-ins, written as strings, stay strings.
		{name: `"N" as a latency`, format: VLLMBench, src: `{"completed": 8, "mean_ttft_ms": "N"}`,
			err: `h.json:1:34: /mean_ttft_ms: expected a number, got the string "N"`},
		{name: `"+Infin" as the request rate`, format: VLLMBench, src: `{"completed": 8, "request_rate": "+Infin"}`,
			err: `h.json:1:34: /request_rate: expected a number, got the string "+Infin"`},
		{name: `"+Infin" as a tag`, format: SGLangBench, src: `{"completed": 8, "tag": "+Infin"}`, get: tag, want: "+Infin"},
		{name: `an escaped quote before NaN in a string`, format: SGLangBench, src: `{"completed": 8, "tag": "a\" NaN"}`, get: tag, want: `a" NaN`},
		// As keys: bare, refused where the key is; quoted, a key like any.
		{name: "Infinity as a key", format: VLLMBench, src: `{Infinity: 1, "completed": 8}`,
			err: "h.json:1:2: invalid character 'I' looking for beginning of object key string"},
		{name: "NaN as a later key", format: VLLMBench, src: `{"completed": 8, NaN: 1}`,
			err: "h.json:1:18: invalid character 'N' looking for beginning of object key string"},
		{name: "NaN as a nested key", format: AIPerf, src: `{"request_count": {NaN: 4}}`,
			err: "h.json:1:20: invalid character 'N' looking for beginning of object key string"},
		{name: `"NaN" as a quoted key`, format: VLLMBench, src: `{"NaN": 1, "Infinity": 2, "completed": 8}`, get: completed, want: 8.0},
		// Where nothing reads them, passed over.
		{name: "in an array no one reads", format: SGLangBench, src: `{"completed": 8, "x": [NaN, Infinity, -Infinity, {"y": NaN}]}`, get: completed, want: 8.0},
		// Not the tokens: refused as the decoder sees them.
		{name: "Infinityx", format: VLLMBench, src: `{"completed": Infinityx}`,
			err: "h.json:1:23: invalid character 'x' after object key:value pair"},
		{name: "nan, lower case", format: VLLMBench, src: `{"completed": nan}`,
			err: "h.json:1:16: invalid character 'a' in literal null (expecting 'u')"},
		{name: "a number past float64", format: VLLMBench, src: `{"completed": 8, "mean_ttft_ms": 1e999}`,
			err: "h.json:1:34: /mean_ttft_ms: 1e999 is not a finite number"},
	} {
		c.check(t)
	}
}

// Duplicate keys: the last one's value is read, as encoding/json and
// Python's json (which the tools write with) read it, and an error names
// the last one's place (docs/results.md says so).
func TestDuplicateKeys(t *testing.T) {
	for _, c := range []hostile{
		{name: "the count twice", format: VLLMBench, src: `{"completed": 1, "completed": 2}`, get: completed, want: 2.0},
		{name: "a wrong type, then a number", format: VLLMBench, src: `{"completed": 8, "mean_ttft_ms": "slow", "mean_ttft_ms": 5}`, get: metric("ttft_mean_ms"), want: 5.0},
		{name: "a number, then a wrong type", format: VLLMBench, src: "{\"completed\": 8, \"mean_ttft_ms\": 5,\n \"mean_ttft_ms\": \"slow\"}",
			err: `h.json:2:18: /mean_ttft_ms: expected a number, got the string "slow"`},
		{name: "a statistics object twice", format: AIPerf, src: `{"request_count": {"avg": 4}, "time_to_first_token": {"unit": "ms", "avg": 1, "p99": 9}, "time_to_first_token": {"unit": "s", "avg": 2}}`,
			get: metric("ttft_mean_ms"), want: 2000.0},
		{name: "... whose first keys are gone", format: AIPerf, src: `{"request_count": {"avg": 4}, "time_to_first_token": {"unit": "ms", "avg": 1, "p99": 9}, "time_to_first_token": {"unit": "s", "avg": 2}}`,
			get: metric("ttft_p99_ms"), want: "missing"},
		{name: "the tag twice, on line 2", format: SGLangBench, src: "{\"completed\": 1, \"tag\": \"a\"}\n{\"completed\": 1, \"tag\": \"b\", \"tag\": \"c\"}", get: tag, want: "c"},
	} {
		c.check(t)
	}
}

// A value of the wrong type is refused with its place and key; null is
// absent (a key the version does not write), never zero.
func TestWrongTypes(t *testing.T) {
	for _, c := range []hostile{
		{name: "the count as a string", format: VLLMBench, src: `{"completed": "8"}`,
			err: `h.json:1:15: /completed: expected a number, got the string "8"`},
		{name: "the count as a boolean", format: SGLangBench, src: "{\n\"completed\": true}",
			err: "h.json:2:14: /completed: expected a number, got a boolean"},
		{name: "a latency as an array", format: VLLMBench, src: `{"completed": 8, "p99_ttft_ms": [1]}`,
			err: "h.json:1:33: /p99_ttft_ms: expected a number, got an array"},
		{name: "a throughput as an object", format: SGLangBench, src: `{"completed": 8, "output_throughput": {"avg": 1}}`,
			err: "h.json:1:39: /output_throughput: expected a number, got an object"},
		{name: "the request rate as a boolean", format: VLLMBench, src: `{"completed": 8, "request_rate": false}`,
			err: "h.json:1:34: /request_rate: expected a number, got a boolean"},
		{name: "a tag as a number", format: SGLangBench, src: `{"completed": 8, "tag": 3}`,
			err: "h.json:1:25: /tag: expected a string, got a number"},
		{name: "AIPerf's unit as a number", format: AIPerf, src: `{"request_count": {"avg": 4}, "time_to_first_token": {"unit": 1000, "avg": 1}}`,
			err: "h.json:1:63: /time_to_first_token/unit: expected a string, got a number"},
		{name: "an inference-perf count as a string", format: InferencePerfPrometheus, src: `{"successes": {"count": "many", "rate": 1}}`,
			err: `h.json:1:25: /successes/count: expected a number, got the string "many"`},
		{name: "null: absent", format: VLLMBench, src: `{"completed": 8, "p99_ttft_ms": null}`, get: metric("ttft_p99_ms"), want: "missing"},
		{name: "the document an array", format: AIPerf, src: "\n [{\"request_count\": {\"avg\": 4}}]",
			err: "h.json:2:2: expected a JSON object, got an array"},
		{name: "the document a string", format: InferencePerf, src: `"NaN"`,
			err: `h.json:1:1: expected a JSON object, got the string "NaN"`},
	} {
		c.check(t)
	}
}

// Binary garbage, an empty file, and a file cut short: refused with the
// place, never a run of zeros.
func TestGarbage(t *testing.T) {
	for _, c := range []hostile{
		{name: "NUL bytes", format: VLLMBench, src: "\x00\x01\x02\xff",
			err: `h.json:1:1: invalid character '\x00' looking for beginning of value`},
		{name: "garbage after a run", format: VLLMBench, src: "{\"completed\": 1}\n\x7fELF\x02\x01",
			err: `h.json:2:1: invalid character '\x7f' after top-level value`},
		{name: "garbage in JSONL", format: SGLangBench, src: "{\"completed\": 1}\n{\"completed\": 2}\n{\xfe\xff}",
			err: `h.json:3:2: invalid character 'þ' looking for beginning of object key string`},
		{name: "gzip", format: AIPerf, src: "\x1f\x8b\x08\x00\x00\x00\x00\x00",
			err: `h.json:1:1: invalid character '\x1f' looking for beginning of value`},
		{name: "cut short", format: VLLMBench, src: `{"completed": 8, "mean_tt`,
			err: "h.json:1:26: unexpected end of JSON input"},
		{name: "empty", format: VLLMBench, src: "",
			err: "h.json:1:1: the file is empty (0 bytes, no JSON): the tool wrote no result"},
		{name: "blanks", format: InferencePerf, src: " \n\t\n",
			err: "h.json:1:1: the file is empty (4 bytes, no JSON): the tool wrote no result"},
		// Invalid UTF-8 in a string is read as U+FFFD, as encoding/json does.
		{name: "invalid UTF-8 in a tag", format: SGLangBench, src: "{\"completed\": 8, \"tag\": \"a\xffb\"}", get: tag, want: "a\ufffdb"},
	} {
		c.check(t)
	}
	// A NUL inside a string is refused too (a control character).
	if _, err := ReadRuns(VLLMBench, "h.json", []byte("{\"completed\": 8, \"label\": \"a\x00\"}")); err == nil || !strings.HasPrefix(err.Error(), "h.json:1:29: invalid character '\\x00' in string literal") {
		t.Errorf("a NUL in a string: %v", err)
	}
}
