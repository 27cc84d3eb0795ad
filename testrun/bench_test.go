package testrun

import (
	"bytes"
	"os"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

// benchSweep is $KVSWEEP_BENCH_SWEEP (bench/collect.sh makes one of 10,000
// cells); without it, the committed mixed sweep.
func benchSweep() string {
	if dir := os.Getenv("KVSWEEP_BENCH_SWEEP"); dir != "" {
		return dir
	}
	return "testdata/base"
}

// BenchmarkCollect collects the sweep's cells; the manifest is read once,
// outside the loop, as a command reads it.
func BenchmarkCollect(b *testing.B) {
	dir := benchSweep()
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Collect(dir, CollectOptions{Manifest: m}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResultsFile encodes the collected run as results.json and
// decodes it back.
func BenchmarkResultsFile(b *testing.B) {
	run, err := Collect(benchSweep(), CollectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := encodeRun(&buf, run); err != nil {
			b.Fatal(err)
		}
		if _, err := decodeRun(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// BenchmarkDecodeResults decodes the collected run's results.json, as
// report and compare read it.
func BenchmarkDecodeResults(b *testing.B) {
	run, err := Collect(benchSweep(), CollectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := encodeRun(&buf, run); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRun(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
