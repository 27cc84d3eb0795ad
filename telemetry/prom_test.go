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
// would have written, one endpoint of a worker named "w0".
func series(t *testing.T, files ...string) []byte {
	t.Helper()
	var out []byte
	for i, f := range files {
		v, err := Parse(strings.NewReader(string(readCapture(t, f))))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		line, err := json.Marshal(Sample{T: int64(i + 1), URL: "http://127.0.0.1:8000/metrics", Name: "w0", Role: "aggregated", Series: v})
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
	for _, w := range sum.Workers {
		names := make([]string, 0, len(w.Figures))
		for n := range w.Figures {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(b, "  worker %q role %s node %s catalog %v:", w.Worker, w.Role, w.Node, w.Catalog)
		for _, n := range names {
			fmt.Fprintf(b, " %s=%.6g", n, w.Figures[n])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "  (samples %d, failed %d, note %q)\n", sum.Samples, sum.Failed, sum.Note)
}

// Each capture's golden: the series kept, the figures derived from it
// alone, and for vLLM the figures over the idle then loaded captures of
// the same engine (its counters rose between them).
func TestRealCaptures(t *testing.T) {
	for _, file := range captures {
		t.Run(file, func(t *testing.T) {
			v, err := Parse(strings.NewReader(string(readCapture(t, file))))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString("kept:\n")
			for _, s := range v {
				fmt.Fprintf(&b, "  %s{%s} = %.10g\n", s.Family, canonical(s.Labels), s.Value)
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

// lines reads, from the capture's text by hand (no expfmt), the samples
// of family: the lines "family value" and "family{...} value", with
// each line's labels' text.
func lines(t *testing.T, file, family string) (vals []float64, labels []string) {
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
		vals, labels = append(vals, v), append(labels, lab)
	}
	return vals, labels
}

// Each kept series against the capture's own lines, read by hand: as
// many series as lines, the same values in the same order.
func TestRealCapturesAgainstText(t *testing.T) {
	for _, file := range captures {
		v, err := Parse(strings.NewReader(string(readCapture(t, file))))
		if err != nil {
			t.Fatal(err)
		}
		for _, fam := range Families {
			want, _ := lines(t, file, fam)
			var got []float64
			for _, s := range v {
				if s.Family == fam {
					got = append(got, s.Value)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%s: %s kept %v, the text's lines give %v", file, fam, got, want)
			}
		}
	}
}

// The figures of each capture, each worked out by hand from the
// capture's lines (quoted in the comment), and the catalog entry that
// gave it.
func TestRealCaptureFigures(t *testing.T) {
	for _, c := range []struct {
		files   []string
		name    string
		want    float64
		catalog string
	}{
		// sglang:cache_hit_rate{name="google/gemma-2-9b-it"} 10.61: the
		// percent era (name=, not model_name=), 10.61 / 100.
		{[]string{"sglang-0.3-docs.prom"}, HitRate, 10.61 / 100, "sglang-gauge-percent"},
		// sglang:token_usage{name=...} 0.01
		{[]string{"sglang-0.3-docs.prom"}, UsagePeak, 0.01, "sglang-usage"},
		// sglang:cache_hit_rate{model_name=...} 0.007507552643049313, a
		// ratio; no sglang:cached_tokens_total, so the gauge.
		{[]string{"sglang-0.4-docs.prom"}, HitRate, 0.007507552643049313, "sglang-gauge"},
		// sglang:token_usage{model_name=...} 0.28
		{[]string{"sglang-0.4-docs.prom"}, UsagePeak, 0.28, "sglang-usage"},
		// sglang_cache_hit_rate{...tp_rank="0"...} 0: every sample 0, so 0.
		{[]string{"sglang-grpc-underscore-smg813.prom"}, HitRate, 0, "sglang-gauge-underscore"},
		// dynamo_component_kvstats_gpu_cache_usage_percent 0.00007755545084364712:
		// a fraction (one block of total_blocks 12894: 1/12894), not /100.
		{[]string{"dynamo-kvstats-pr2704.prom"}, UsagePeak, 0.00007755545084364712, "dynamo-kvstats-usage"},
		// dynamo_component_kvstats_gpu_prefix_cache_hit_rate 0
		{[]string{"dynamo-kvstats-pr2704.prom"}, HitRate, 0, "dynamo-kvstats"},
		// vllm:kv_cache_usage_perc{engine="0"} 0.11223878211531546 (loaded)
		{[]string{"vllm-0.25.1-loaded.prom"}, UsagePeak, 0.11223878211531546, "vllm-kv-usage"},
		// hits 0 -> 2480, queries 0 -> 339968: 2480 / 339968 = 0.0072948...
		{[]string{"vllm-0.25.1-idle.prom", "vllm-0.25.1-loaded.prom"}, HitRate, 2480.0 / 339968, "vllm-v1"},
		// vllm:num_preemptions_total 0 -> 0
		{[]string{"vllm-0.25.1-idle.prom", "vllm-0.25.1-loaded.prom"}, Preemptions, 0, "vllm-preemptions"},
		// prompt_tokens_by_source_total{source="local_compute"} 0 -> 337488,
		// local_cache_hit 0 -> 2480 (= the hits), external_kv_transfer 0 -> 0
		{[]string{"vllm-0.25.1-idle.prom", "vllm-0.25.1-loaded.prom"}, "prompt_tokens_local_compute", 337488, ""},
		{[]string{"vllm-0.25.1-idle.prom", "vllm-0.25.1-loaded.prom"}, "prompt_tokens_local_cache_hit", 2480, ""},
		{[]string{"vllm-0.25.1-idle.prom", "vllm-0.25.1-loaded.prom"}, "prompt_tokens_external_kv_transfer", 0, ""},
	} {
		_, sum := Derive(series(t, c.files...))
		if len(sum.Workers) != 1 {
			t.Fatalf("%v: workers %+v", c.files, sum.Workers)
		}
		w := sum.Workers[0]
		got, ok := w.Figures[c.name]
		if !ok || math.Abs(got-c.want) > 1e-12*math.Max(c.want, 1) || c.catalog != "" && !slices.Contains(w.Catalog, c.catalog) {
			t.Errorf("%v: %s = %v (%v) by %v, want %v by %s", c.files, c.name, got, ok, w.Catalog, c.want, c.catalog)
		}
	}
	// One scrape of vLLM has no hit rate: its counters need a second; the
	// external counters stayed at 0 (no connector): no connector rate.
	if _, sum := Derive(series(t, "vllm-0.25.1-loaded.prom")); hasFigure(sum, HitRate) {
		t.Error("a hit rate from one scrape of vLLM's counters")
	}
	if _, sum := Derive(series(t, "vllm-0.25.1-idle.prom", "vllm-0.25.1-loaded.prom")); hasFigure(sum, ConnectorRate) {
		t.Error("a connector hit rate from external counters that stayed at 0")
	}
	// The sidecar's capture has no usage gauge: the note names SGLang's.
	if _, sum := Derive(series(t, "sglang-grpc-underscore-smg813.prom")); !strings.Contains(sum.Note, "w0: SGLang exposed none of sglang:token_usage (kv_cache_usage_peak)") {
		t.Errorf("note %q", sum.Note)
	}
}

func hasFigure(sum Summary, name string) bool {
	for _, w := range sum.Workers {
		if _, ok := w.Figures[name]; ok {
			return true
		}
	}
	return false
}
