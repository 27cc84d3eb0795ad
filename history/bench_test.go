package history_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/history/bolt"
	"github.com/kvsweep/kvsweep/history/pg"
	"github.com/kvsweep/kvsweep/internal/testing/pgtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// BenchmarkHistoryQuery fills a bbolt file and a PostgreSQL database with
// the same runs ($KVSWEEP_BENCH_RUNS, default 20,000, of 50 cells each;
// filling is not timed) and times the three queries commands make of a
// large history, each answered by the store (query) and the way kvsweep
// answered it before: every run read and filtered in Go (scan). Each
// iteration opens the store, queries it and closes it, as a command does;
// the first checks that both ways give the same runs.
//
//	report --history --filter model=m042   one spec's runs of 100 models: 1% of the runs
//	nodes --window 0                        the runs with a failure outside the test: 1%
//	ci --baseline auto                      the newest run of a spec and ref (100 specs x 2 refs)
//
//	bench/run.sh history-query
func BenchmarkHistoryQuery(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("KVSWEEP_BENCH_RUNS")); err == nil && v > 0 {
		n = v
	}
	stores := map[string]string{"bolt": b.TempDir() + "/history.db", "postgres": pgtest.DB(b)}
	for _, name := range []string{"bolt", "postgres"} {
		start := time.Now()
		fill(b, stores[name], n)
		b.Logf("%s: %d runs of 50 cells stored in %s", name, n, time.Since(start).Round(time.Second))
	}
	queries := []struct {
		name string
		q    history.Query
	}{
		{"filter", history.Query{Filters: []history.Filter{{Key: "model", Value: "m042"}}}},
		{"nodes", history.Query{InfraFailures: true}},
		{"baseline", history.Query{Named: true, Name: "spec-07", Ref: "main", Except: benchID(n - 1), Newest: true}},
	}
	for _, name := range []string{"bolt", "postgres"} {
		for _, qc := range queries {
			var want []string
			for _, way := range []string{"scan", "query"} {
				b.Run(fmt.Sprintf("%s/%s/%s", name, qc.name, way), func(b *testing.B) {
					for b.Loop() {
						got := ask(b, stores[name], qc.q, way == "scan")
						if want == nil {
							want = got
						} else if !slices.Equal(got, want) {
							b.Fatalf("%s gives %d runs, the scan %d", way, len(got), len(want))
						}
					}
				})
			}
		}
	}
}

// ask opens the store at loc, answers q and closes it: the ids of the
// runs, with the count of their cells.
func ask(b *testing.B, loc string, q history.Query, scan bool) []string {
	h, err := history.Open(loc, true)
	sweeptest.Must(b, err)
	defer h.Close()
	var runs []*testrun.Run
	if scan {
		runs, err = history.Scan(h, q)
	} else {
		runs, err = h.Query(q)
	}
	sweeptest.Must(b, err)
	out := []string{}
	for _, r := range runs {
		out = append(out, fmt.Sprintf("%s:%d", r.ID, len(r.Cells)))
	}
	return out
}

func benchID(i int) string { return fmt.Sprintf("sweep-%05d", i) }

// fill stores n runs in the store at loc, one Put each.
func fill(b *testing.B, loc string, n int) {
	h, err := history.Open(loc, false)
	sweeptest.Must(b, err)
	defer h.Close()
	for i := range n {
		sweeptest.Must(b, h.Put(benchRun(i)))
	}
}

// benchRun is the i-th run: spec spec-NN (100), ref main or dev, one
// model of 100 for all its cells, collected an hour after the one
// before; one run in 100 has a cell that failed outside the test.
func benchRun(i int) *testrun.Run {
	at := sweeptest.Now.Add(time.Duration(i) * time.Hour)
	r := &testrun.Run{ID: benchID(i), Name: fmt.Sprintf("spec-%02d", i%100), Ref: []string{"main", "dev"}[i/100%2],
		CollectedAt: at, Started: at.Add(-time.Hour).Format(time.RFC3339)}
	model := fmt.Sprintf("m%03d", i*7%100)
	for c := range 50 {
		cell := testrun.CellResult{CellID: fmt.Sprintf("%012x", c), Name: fmt.Sprintf("cell-%d", c), Outcome: testrun.OK,
			Params: map[string]string{"engine": []string{"vllm", "sglang"}[c%2], "model": model, "repeat": strconv.Itoa(c % 5)},
			Image:  result.Image{Ref: "registry/kvcr:nightly", Digest: fmt.Sprintf("sha256:%064x", i/50)},
			Cases: []result.Case{{ID: "TC-01", Verdict: result.Pass, Metrics: result.Metrics{
				{Name: "ttft_ms", Value: float64(c), Unit: "ms", Direction: "lower"}}}}}
		if i%100 == 13 && c == 7 {
			cell.Outcome, cell.Class, cell.State, cell.Nodes = testrun.Missing, testrun.ClassInfra, "NODE_FAIL", fmt.Sprintf("node-%d", i%9)
		}
		r.Cells = append(r.Cells, cell)
	}
	return r
}

// The PostgreSQL backend registers itself; bolt's is imported for plain
// paths.
var _ = []any{bolt.Open, pg.Open}
