package telemetry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/internal/testing/realout"
)

// The real captures in realout.Dir/prom (SOURCES.md there says from
// where): what telemetry keeps of each and the figures it derives.
var captures = []string{
	"dynamo-kvstats-pr2704.prom",
	"sglang-0.3-docs.prom",
	"sglang-0.4-docs.prom",
	"sglang-grpc-underscore-smg813.prom",
	"vllm-0.25.1-idle.prom",
	"vllm-0.25.1-loaded.prom",
}

func readCapture(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realout.Dir(t), "prom", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// series is the telemetry.jsonl a scrape of each capture, in order,
// would have written.
func series(t *testing.T, files ...string) []byte {
	t.Helper()
	var out []byte
	for i, f := range files {
		v, err := Parse(strings.NewReader(string(readCapture(t, f))))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		line, err := json.Marshal(Sample{T: int64(i + 1), URL: "http://127.0.0.1:8000/metrics", Values: v})
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, line...), '\n')
	}
	return out
}

func writeFigures(b *strings.Builder, series []byte) {
	figs, sum := Derive(series)
	for _, f := range figs {
		fmt.Fprintf(b, "  %s\n", strings.Join(strings.Fields(fmt.Sprintf("%s = %.6g %s %s", f.Name, f.Value, f.Unit, f.Direction)), " "))
	}
	fmt.Fprintf(b, "  (samples %d, failed %d, note %q)\n", sum.Samples, sum.Failed, sum.Note)
}

// Each capture's golden: the families kept (summed over their series),
// the figures derived from it alone, and for vLLM the figures over the
// idle then loaded captures of the same engine (its counters rose
// between them).
func TestRealCaptures(t *testing.T) {
	for _, file := range captures {
		t.Run(file, func(t *testing.T) {
			v, err := Parse(strings.NewReader(string(readCapture(t, file))))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString("kept:\n")
			names := make([]string, 0, len(v))
			for n := range v {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				fmt.Fprintf(&b, "  %s = %.10g\n", n, v[n])
			}
			b.WriteString("figures of this capture alone:\n")
			writeFigures(&b, series(t, file))
			if file == "vllm-0.25.1-loaded.prom" {
				b.WriteString("figures of vllm-0.25.1-idle.prom then this:\n")
				writeFigures(&b, series(t, "vllm-0.25.1-idle.prom", file))
			}
			golden.Check(t, filepath.Join("testdata", "golden", file+".golden"), []byte(b.String()))
		})
	}
}

// lines sums, from the capture's text by hand (no expfmt), the samples
// of family: the lines "family value" and "family{...} value", with
// each line's labels' text.
func lines(t *testing.T, file, family string) (sum float64, n int, labels []string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(string(readCapture(t, file))))
	for sc.Scan() {
		l := sc.Text()
		rest, ok := strings.CutPrefix(l, family)
		if !ok || strings.HasPrefix(l, "#") || len(rest) == 0 || rest[0] != ' ' && rest[0] != '{' {
			continue
		}
		lab := ""
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			lab, rest = rest[1:end], rest[end+1:]
		}
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", file, l, err)
		}
		sum, n, labels = sum+v, n+1, append(labels, lab)
	}
	return sum, n, labels
}

// Each kept value against the capture's own lines, read by hand, and the
// values SOURCES.md gives: SGLang 0.3's cache_hit_rate 10.61 is percent
// (a ratio of 0.1061), Dynamo's usage a fraction of its 12894 blocks,
// vLLM's loaded hit rate its counters' 2480 / 339968.
func TestRealCapturesAgainstText(t *testing.T) {
	for _, file := range captures {
		v, err := Parse(strings.NewReader(string(readCapture(t, file))))
		if err != nil {
			t.Fatal(err)
		}
		for _, fam := range Families {
			want, n, labels := lines(t, file, fam)
			if n == 0 && strings.HasPrefix(fam, "sglang:") {
				want, n, labels = lines(t, file, strings.Replace(fam, "sglang:", "sglang_", 1))
			}
			if fam == "sglang:cache_hit_rate" && n > 0 && strings.HasPrefix(labels[0], "name=") {
				want /= 100
			}
			got, kept := v[fam]
			switch {
			case n == 0 && kept:
				t.Errorf("%s: kept %s = %v, the text has no line of it", file, fam, got)
			case n > 0 && !kept:
				t.Errorf("%s: %s not kept, the text has %d lines of it", file, fam, n)
			case n > 0 && math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)):
				t.Errorf("%s: %s = %v, the text's lines give %v", file, fam, got, want)
			}
		}
	}
	fig := func(files []string, name string) (float64, bool) {
		figs, _ := Derive(series(t, files...))
		for _, f := range figs {
			if f.Name == name {
				return f.Value, true
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		files []string
		name  string
		want  float64
	}{
		{[]string{"sglang-0.3-docs.prom"}, "prefix_cache_hit_rate", 0.1061},
		{[]string{"sglang-0.3-docs.prom"}, "kv_cache_usage_peak", 0.01},
		{[]string{"sglang-0.4-docs.prom"}, "prefix_cache_hit_rate", 0.007507552643049313},
		{[]string{"sglang-0.4-docs.prom"}, "kv_cache_usage_peak", 0.28},
		{[]string{"sglang-grpc-underscore-smg813.prom"}, "prefix_cache_hit_rate", 0},
		{[]string{"dynamo-kvstats-pr2704.prom"}, "kv_cache_usage_peak", 1.0 / 12894},
		{[]string{"dynamo-kvstats-pr2704.prom"}, "prefix_cache_hit_rate", 0},
		{[]string{"vllm-0.25.1-loaded.prom"}, "kv_cache_usage_peak", 0.11223878211531546},
		{[]string{"vllm-0.25.1-idle.prom", "vllm-0.25.1-loaded.prom"}, "prefix_cache_hit_rate", 2480.0 / 339968},
		{[]string{"vllm-0.25.1-idle.prom", "vllm-0.25.1-loaded.prom"}, "preemptions", 0},
	} {
		got, ok := fig(c.files, c.name)
		// Dynamo's usage is one block of 12894, to the float it printed.
		if !ok || math.Abs(got-c.want) > 1e-6*math.Max(c.want, 1e-6) {
			t.Errorf("%v: %s = %v (%v), want %v", c.files, c.name, got, ok, c.want)
		}
	}
	// One scrape of vLLM has no hit rate: its counters need a second.
	if _, ok := fig([]string{"vllm-0.25.1-loaded.prom"}, "prefix_cache_hit_rate"); ok {
		t.Error("a hit rate from one scrape of vLLM's counters")
	}
}
