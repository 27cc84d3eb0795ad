package harness

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// deepFile is the file: 200,000 nested arrays, 400 KB.
func deepFile() []byte {
	return []byte(strings.Repeat("[", 200000) + strings.Repeat("]", 200000))
}

// allocated is what f allocates, in bytes (runtime.MemStats' TotalAlloc:
// every allocation counts, freed or not).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The 400 KB file of 200,000 nested arrays, in every format, is refused
// at its 65th bracket, naming the limit, and reading it allocates less
// than 50 MB (it once grew past 24 GB). BenchmarkDeepFile times it.
func TestDeepFileRefused(t *testing.T) {
	b := deepFile()
	for _, format := range Formats {
		var err error
		n := allocated(func() { _, err = ReadRuns(format, "deep.json", b) })
		if want := "deep.json:1:65: nesting deeper than 64 levels"; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", format, err, want)
		}
		if n > 50<<20 {
			t.Errorf("%s: reading the deep file allocated %d MB, want < 50", format, n>>20)
		}
	}
	// Within a real shape, on line 3 of a JSONL file, and under a key.
	jsonl := "{\"completed\": 1}\n{\"completed\": 2}\n{\"completed\": 3, \"x\": " + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "}\n"
	if _, err := ReadRuns(SGLangBench, "s.jsonl", []byte(jsonl)); err == nil || !strings.HasPrefix(err.Error(), "s.jsonl:3:86: nesting deeper than 64 levels") {
		t.Errorf("JSONL line 3: %v", err)
	}
	// 64 levels are read.
	ok := `{"completed": 1, "x": ` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + "}"
	if _, err := ReadRuns(VLLMBench, "ok.json", []byte(ok)); err != nil {
		t.Errorf("64 levels: %v", err)
	}
	// Past MaxSize.
	if _, err := ReadRuns(VLLMBench, "big.json", make([]byte, MaxSize+1)); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("big.json:%d bytes, larger than the limit of %d", MaxSize+1, MaxSize)) {
		t.Errorf("past MaxSize: %v", err)
	}
}

// A long key: every value under it once noted its whole pointer, the
// key's length each time. Now what reading costs stays linear.
func TestLongKeyLinear(t *testing.T) {
	key := strings.Repeat("k", 1<<20)
	b := []byte(`{"completed": 1, "` + key + `": [` + strings.Repeat("0,", 20000) + `0]}`)
	n := allocated(func() {
		if _, err := ReadRuns(VLLMBench, "long.json", b); err != nil {
			t.Error(err)
		}
	})
	if n > 50<<20 {
		t.Errorf("a 1 MB key over 20,000 values allocated %d MB, want < 50", n>>20)
	}
}

// 500,000 lines of JSONL: each run numbered by its line (no count from the
// start of the file for each).
func TestManyLines(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	b := []byte(strings.Repeat("{\"completed\": 1}\n", 500000))
	runs, err := ReadRuns(SGLangBench, "many.jsonl", b)
	if err != nil || len(runs) != 500000 || runs[499999].Line != 500000 {
		t.Fatalf("%v, %d runs", err, len(runs))
	}
}

// BenchmarkDeepFile: the 400 KB / 200,000-deep file refused.
//
//	go test ./clients -run XXX -bench DeepFile -benchmem
func BenchmarkDeepFile(b *testing.B) {
	f := deepFile()
	b.SetBytes(int64(len(f)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadRuns(VLLMBench, "deep.json", f); err == nil {
			b.Fatal("read")
		}
	}
}

// The fuzzer grows the nesting of a value inside a real run: whatever
// the depth, Read refuses past 64 levels with the limit, reads within it,
// and never panics.
func FuzzDeepRead(f *testing.F) {
	f.Add(uint16(10), uint8(0), []byte("1"))
	f.Add(uint16(64), uint8(1), []byte(`"x"`))
	f.Add(uint16(5000), uint8(2), []byte(`[]`))
	f.Fuzz(func(t *testing.T, n uint16, kind uint8, inner []byte) {
		open, close := "[", "]"
		if kind%2 == 1 {
			open, close = `{"k":`, "}"
		}
		b := []byte(`{"completed": 1, "x": ` + strings.Repeat(open, int(n)) + string(inner) + strings.Repeat(close, int(n)) + "}")
		_, err := ReadRuns(Formats[int(kind)%len(Formats)], "f.json", b)
		if int(n) >= MaxDepth && (err == nil || !strings.Contains(err.Error(), "nesting deeper than 64 levels")) {
			t.Fatalf("%d levels: %v", n+1, err)
		}
	})
}
