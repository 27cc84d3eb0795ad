package telemetry

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// benchSeries is an hour of a 2P+1D cell scraped every 10 s: three
// endpoints x 360 scrapes of vLLM v0.11's exposition text (two engines),
// the counters rising each scrape, as the scraper writes it.
func benchSeries(b *testing.B) []byte {
	text, err := os.ReadFile("testdata/vllm-0.11.metrics")
	if err != nil {
		b.Fatal(err)
	}
	ss, err := Parse(strings.NewReader(string(text)))
	if err != nil {
		b.Fatal(err)
	}
	var out []byte
	for i := range 360 {
		for _, w := range []string{"prefill-0", "prefill-1", "decode-0"} {
			cur := make([]Series, len(ss))
			for j, s := range ss {
				cur[j] = s
				cur[j].Value = s.Value * float64(i+1)
			}
			line, _ := json.Marshal(Sample{T: int64(i) * 10000, URL: "http://" + w + ":8000/metrics", Name: w, Role: "prefill", Series: cur})
			out = append(append(out, line...), '\n')
		}
	}
	return out
}

// BenchmarkDerive derives the cell's figures from an hour's series, as
// collect does once a cell (go test ./telemetry -run XXX -bench Derive
// -benchmem).
func BenchmarkDerive(b *testing.B) {
	series := benchSeries(b)
	windows := []byte(`{"case":"TC-01","event":"start","t":0}` + "\n" + `{"case":"TC-01","event":"end","t":1800000}` + "\n" +
		`{"case":"TC-02","event":"start","t":1800000}` + "\n" + `{"case":"TC-02","event":"end","t":3600000}` + "\n")
	b.Run("cell", func(b *testing.B) {
		b.SetBytes(int64(len(series)))
		b.ReportAllocs()
		for b.Loop() {
			Derive(series)
		}
	})
	b.Run("two-windows", func(b *testing.B) {
		b.SetBytes(int64(len(series)))
		b.ReportAllocs()
		for b.Loop() {
			DeriveWindows(series, windows)
		}
	})
}
