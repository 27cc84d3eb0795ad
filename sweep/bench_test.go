package sweep

import (
	"os"
	"testing"
)

// BenchmarkReadManifest reads the manifest of $KVSWEEP_BENCH_SWEEP
// (bench/collect.sh makes one of 10,000 cells), or of the reports
// package's sample sweep, anew each time (not from the memo).
func BenchmarkReadManifest(b *testing.B) {
	dir := os.Getenv("KVSWEEP_BENCH_SWEEP")
	if dir == "" {
		dir = "../testrun/testdata/base"
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readManifest(dir); err != nil {
			b.Fatal(err)
		}
	}
}
