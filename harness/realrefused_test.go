package harness

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/internal/testing/realout"
)

// The real files no format reads: what each format says of them is the
// golden, and each refusal names what the file is.
var refusedFiles = map[string]string{
	"lmcache-1.json": "LMCache's LongDocQA result",
	"dynamo-1.json":  "Dynamo's router benchmark history",
	"aiperf-3.csv":   "AIPerf's CSV summary: read the JSON export",
}

func TestRealFilesRefused(t *testing.T) {
	dir := realout.Dir(t)
	for file, want := range refusedFiles {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			for _, format := range Formats {
				_, err := ReadRuns(format, file, b)
				if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), file+":1:1: ") {
					t.Errorf("%s as %s: %v, want %q at 1:1", file, format, err, want)
				}
				fmt.Fprintf(&out, "%s: %v\n", format, err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", file+".golden"), []byte(out.String()))
		})
	}
}

// pointer is the value at an RFC 6901 pointer of a JSON file, as
// encoding/json reads it (no escapes in the pointers used here).
func pointer(t *testing.T, file, ptr string) (any, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realout.Dir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, tok := range strings.Split(ptr, "/")[1:] {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// The refusals against SOURCES.md's pointers: what SOURCES.md says is
// there is there (so the file is what the refusal names), and what the
// readers need is not (so refusing it loses nothing they could read).
func TestRealFilesRefusedPointers(t *testing.T) {
	for _, c := range []struct {
		file, ptr string
		want      any // nil: present, any value; "absent": not there
	}{
		{"lmcache-1.json", "/query_ttft_per_prompt", nil},
		{"lmcache-1.json", "/query_round_time_per_prompt", nil},
		{"lmcache-1.json", "/warmup_round_time_per_prompt", nil},
		{"lmcache-1.json", "/completed", "absent"}, // "no completed count"
		{"lmcache-1.json", "/request_count", "absent"},
		{"dynamo-1.json", "/0/results/prefix_ratios/0", 0.5},
		{"dynamo-1.json", "/0/results/config/requests", 5.0},
		{"dynamo-1.json", "/0/results/ttft_p50_values/0", nil},
		{"dynamo-1.json", "/0/results/itl_p75_values/0", nil},
		{"dynamo-1.json", "/0/results/completed", "absent"},
	} {
		v, ok := pointer(t, c.file, c.ptr)
		switch {
		case c.want == "absent":
			if ok {
				t.Errorf("%s %s = %v, SOURCES.md says it is not there", c.file, c.ptr, v)
			}
		case !ok:
			t.Errorf("%s %s: not there, SOURCES.md points at it", c.file, c.ptr)
		case c.want != nil && v != c.want:
			t.Errorf("%s %s = %v, SOURCES.md says %v", c.file, c.ptr, v, c.want)
		}
	}
}

// aiperf-3.csv is refused pointing at the JSON export of the same run:
// read as aiperf, that export gives what the CSV says (to its two
// decimals), TTFT 2343.22 / 2369.32 / 3833.39 ms as SOURCES.md has them.
func TestAIPerfCSVMatchesExport(t *testing.T) {
	f, err := os.Open(filepath.Join(realout.Dir(t), "aiperf-3.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	csvAt := func(metric, col string) float64 {
		t.Helper()
		for _, row := range rows {
			if row[0] == metric {
				i := map[string]int{"avg": 1, "p50": 7, "p99": 11, "Value": 1}[col]
				v, err := strconv.ParseFloat(row[i], 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
		t.Fatalf("aiperf-3.csv: no row %q", metric)
		return 0
	}
	run := readReal(t, "aiperf-3.json")[0]
	for _, c := range []struct {
		metric, row, col string
		sources          float64 // SOURCES.md's value, 0: none given
	}{
		{"ttft_mean_ms", "Time to First Token (ms)", "avg", 2343.22},
		{"ttft_p50_ms", "Time to First Token (ms)", "p50", 2369.32},
		{"ttft_p99_ms", "Time to First Token (ms)", "p99", 3833.39},
		{"itl_mean_ms", "Inter Token Latency (ms)", "avg", 27.763},
		{"ttst_mean_ms", "Time to Second Token (ms)", "avg", 0},
		{"e2el_mean_ms", "Request Latency (ms)", "avg", 0},
		{"output_tokens_per_s", "Output Token Throughput (tokens/sec)", "Value", 2320.72},
		{"completed", "Request Count", "Value", 89},
		{"failed", "Error Request Count", "Value", 11},
	} {
		m, ok := run.Metric(c.metric)
		if !ok {
			t.Errorf("aiperf-3.json: no %s", c.metric)
			continue
		}
		if got, want := math.Round(m.Value*100)/100, csvAt(c.row, c.col); got != want {
			t.Errorf("%s: the export reads %v (%.2f), the CSV's %s %s says %v", c.metric, m.Value, got, c.row, c.col, want)
		}
		if c.sources != 0 && math.Abs(m.Value-c.sources) > 0.005 {
			t.Errorf("%s = %v, SOURCES.md says %v", c.metric, m.Value, c.sources)
		}
	}
}
