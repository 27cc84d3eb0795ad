package pg

import (
	"fmt"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/pgtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// BenchmarkPut stores a run of 10,000 cells (three cases of five metrics
// each) again and again: each Put replaces the run before.
func BenchmarkPut(b *testing.B) {
	st, err := Open(pgtest.DB(b), false)
	sweeptest.Must(b, err)
	defer st.Close()
	run := &testrun.Run{ID: "big-1", Name: "big", CollectedAt: sweeptest.Now}
	for c := range 10000 {
		cell := testrun.CellResult{CellID: fmt.Sprintf("%012x", c), Name: fmt.Sprintf("cell-%d", c), Outcome: testrun.OK,
			Params: map[string]string{"engine": "vllm", "repeat": fmt.Sprint(c)}}
		for k := range 3 {
			cs := result.Case{ID: fmt.Sprintf("TC-%02d", k+1), Verdict: result.Pass}
			for m := range 5 {
				cs.Metrics = append(cs.Metrics, result.Metric{Name: fmt.Sprintf("m%d", m), Value: float64(c*m) / 7, Unit: "ms", Direction: "lower"})
			}
			cell.Cases = append(cell.Cases, cs)
		}
		run.Cells = append(run.Cells, cell)
	}
	for b.Loop() {
		sweeptest.Must(b, st.Put(run))
	}
}
