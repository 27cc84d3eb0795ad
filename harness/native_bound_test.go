package harness

import (
	"runtime"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

// A native result nested 200,000 deep (400 KB) is refused by the
// pre-scan with its line and column, allocating less than 50 MB.
func TestNativeDeepRefused(t *testing.T) {
	b := []byte("{\"tests\":\n" + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "}")
	nr := &sweep.NativeResult{File: "phase1.json", Cases: map[string]sweep.NativeCase{"*": {Verdict: "/tests/{case}/status"}}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := FromNative(nr, b, sweep.Cell{Cases: []string{"TC-01"}})
	runtime.ReadMemStats(&after)
	if want := "phase1.json:2:64: nesting deeper than 64 levels"; err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 50<<20 {
		t.Errorf("allocated %d MB, want < 50", n>>20)
	}
}
