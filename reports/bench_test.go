package reports

import (
	"os"
	"testing"
)

// BenchmarkCollect collects the sweep at $KVSWEEP_BENCH_SWEEP (bench/collect.sh
// makes one of 10,000 cells); without it, the committed mixed sweep.
func BenchmarkCollect(b *testing.B) {
	dir := os.Getenv("KVSWEEP_BENCH_SWEEP")
	if dir == "" {
		dir = "testdata/base"
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Collect(dir, CollectOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
