package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/testrun"
)

// A store's own answer to a query (its index, its SQL) is what reading
// every run and filtering them gives (history.Apply): the same runs, in
// the same order, narrowed to the same cells, with the same notes. Some
// runs are stored twice, the second time with other cells and name, so
// that what the first one left in an index shows.
func queryAgrees(t *testing.T, loc string) {
	st := open(t, loc, false)
	for i := range 48 {
		if i%5 == 0 {
			sweeptest.Must(t, st.Put(queryRun(i, true)))
		}
		sweeptest.Must(t, st.Put(queryRun(i, false)))
		if i%7 == 0 {
			sweeptest.Must(t, st.AddNote(testrun.Note{Sweep: queryID(i), Author: "tester", Time: sweeptest.Now, Text: "run note"}))
			sweeptest.Must(t, st.AddNote(testrun.Note{Sweep: queryID(i), Cell: "cell-1", Author: "tester", Time: sweeptest.Now, Text: "cell note"}))
		}
	}
	all, err := st.Runs()
	sweeptest.Must(t, err)
	for _, q := range queries() {
		got, err := st.Query(q)
		sweeptest.Must(t, err)
		want := history.Apply(all, q)
		if g, w := hashes(t, got), hashes(t, want); !slices.Equal(g, w) {
			t.Errorf("Query(%+v):\n got %v\nwant %v", q, g, w)
		}
	}
}

// queries are the queries held to history.Apply: each field alone, and
// together.
func queries() []history.Query {
	day := func(d int) time.Time { return sweeptest.Now.Add(time.Duration(d) * 24 * time.Hour) }
	f := func(k, v string) []history.Filter { return []history.Filter{{Key: k, Value: v}} }
	return []history.Query{
		{},
		{Named: true, Name: "nightly", Ref: "main"},
		{Named: true, Name: "nightly", Ref: "main", Newest: true},
		{Named: true, Name: "nightly", Ref: "main", Newest: true, Except: queryID(45)},
		{Named: true, Name: "nightly", Ref: "", Newest: true},
		{Named: true, Name: "nightly", Ref: "dev", Newest: true},
		{Named: true, Name: "none", Ref: "main", Newest: true},
		{Named: true, Name: "replaced", Ref: "main"},
		{Spec: "nightly"},
		{Spec: "replaced"},
		{Spec: "none"},
		{Spec: "pr", From: day(5), Filters: f("engine", "vllm")},
		{From: day(3), To: day(9)},
		{From: day(10)},
		{To: day(2)},
		{CollectedSince: day(20)},
		{InfraFailures: true},
		{InfraFailures: true, CollectedSince: day(12)},
		{Filters: f("engine", "vllm")},
		{Filters: f("engine", "sglang")},
		{Filters: f("model", "m3")},
		{Filters: f("opt", "")},
		{Filters: f("opt", "on")},
		{Filters: append(f("engine", "vllm"), f("model", "m1")...)},
		{Filters: f("image.ref", "registry/kvcr:1")},
		{Filters: f("image.ref", "")},
		{Filters: f("image.digest", "sha256:ab")},
		{Filters: f("image.digest", "ab12")},
		{Filters: f("image.source_revisions.kvcr", "c0ffee")},
		{Filters: f("image.source_revisions.kvcr", "")},
		{Filters: f("image.source_revisions.dynamo", "d")},
		{Named: true, Name: "nightly", Ref: "main", From: day(5), Filters: f("engine", "vllm"), Newest: true},
		{From: day(1), To: day(30), InfraFailures: true, Filters: f("model", "m2")},
	}
}

func queryID(i int) string { return fmt.Sprintf("q-%03d", i) }

// queryRun is the i-th run of queryAgrees: specs, refs, dates (some runs
// with no start, some collected at the same time), cells with and without
// parameters, images and revisions, failures outside the test now and in
// earlier attempts, and cells classed infra while still running. first is an earlier run of the same sweep, replaced.
func queryRun(i int, first bool) *testrun.Run {
	at := sweeptest.Now.Add(time.Duration(i/2) * 24 * time.Hour)
	r := &testrun.Run{ID: queryID(i), Name: []string{"nightly", "pr"}[i%2], Ref: []string{"main", "dev", ""}[i%3], CollectedAt: at}
	if i%4 != 0 {
		r.Started = at.Add(-time.Hour).Format(time.RFC3339)
	}
	engines := []string{"vllm", "sglang"}
	if first {
		r.Name, engines = "replaced", []string{"first"}
	}
	for c := range 6 {
		cell := testrun.CellResult{CellID: fmt.Sprintf("%012d", c), Name: fmt.Sprintf("cell-%d", c), Outcome: testrun.OK,
			Params: map[string]string{"engine": engines[(i+c)%len(engines)], "model": fmt.Sprintf("m%d", (i+c)%5)}}
		if c%3 == 0 {
			cell.Params["opt"] = "on"
		}
		if (i+c)%4 != 0 {
			cell.Image.Ref = fmt.Sprintf("registry/kvcr:%d", (i+c)%3)
			cell.Image.Digest = fmt.Sprintf("sha256:%02x12%d", 0xab+(i+c)%2, c)
			cell.Image.SourceRevisions = &provenance.SourceRevisions{SchemaVersion: 1, Components: map[string]provenance.Component{
				"kvcr": {Commit: []string{"c0ffee1", "c0ffee2", "beef"}[(i+c)%3]}, "dynamo": {Commit: ""}}}
		}
		switch (i*7 + c) % 11 {
		case 0:
			cell.Outcome, cell.Class, cell.State, cell.Nodes = testrun.Missing, testrun.ClassInfra, "NODE_FAIL", fmt.Sprintf("n%d", c)
		case 1:
			cell.Earlier = []testrun.Attempt{{State: "PREEMPTED", Nodes: "n9", Class: testrun.ClassInfra}}
		case 2:
			cell.Outcome, cell.Class = testrun.Missing, testrun.ClassTest
		case 3, 4:
			// A cell still running or queued when an older kvsweep
			// collected it, classed infra then: no failure outside the
			// test, in any store.
			cell.Outcome, cell.Class, cell.State, cell.Nodes = testrun.Missing, testrun.ClassInfra, []string{"RUNNING", "PENDING"}[c%2], "n7"
		}
		r.Cells = append(r.Cells, cell)
	}
	return r
}

// hashes are the ids and content hashes (notes included) of runs, in
// order.
func hashes(t *testing.T, runs []*testrun.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID+" "+hash(t, r))
	}
	return out
}
