package reports

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/testrun"
)

// A run whose cases declare cache states shows each case's state and
// what the job did before it; the JSON summary carries the record.
func TestSummaryCacheStates(t *testing.T) {
	run := collected(t, "mixed")
	c := &run.Cells[0]
	c.Cache = []testrun.CaseCacheResult{
		{Case: "TC-01", State: "cold", Marked: true, Steps: []testrun.CacheStep{
			{What: "reset", Target: "http://127.0.0.1:8000/reset_prefix_cache", OK: true, Detail: "200 OK"},
			{What: "tier_reset", Target: "kvcr-cli flush", OK: false, Detail: "exit 1 | \x1b[31mrefused"},
		}},
		{Case: "TC-02", State: "warm"},
		{Case: "TC-04", State: "primed", Marked: true, Steps: []testrun.CacheStep{{What: "prime", Target: "python3 prime.py", OK: true}}},
	}
	for _, f := range []Format{"markdown", "table"} {
		var b bytes.Buffer
		if err := WriteSummary(&b, f, run); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", "cache-states."+string(f)), b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, "json", run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"what": "tier_reset"`) {
		t.Errorf("json summary lacks the cache record")
	}
}
