package matrix

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A search section adds its load axis to every cell, at the start load.
func TestSearchSection(t *testing.T) {
	src := edit(t, "name: mini\n", "name: mini\nsearch: {min: 1, max: 64, step: 1, slo: {ttft_p99_ms: 500, failed: 0}}\n")
	s, err := Parse("sweep.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	if s.Search.Start != 16 || s.Search.Repeats != 3 || s.Search.Axis != SearchRate || len(s.Search.SLO) != 2 || s.Search.SLO[1] != (SLO{"failed", 0}) {
		t.Errorf("search %+v", s.Search)
	}
	for _, c := range cells {
		if c.Params["rate"] != "16" || c.Params["repeat"] != "1" || !strings.Contains(c.Name, "rate-16") {
			t.Errorf("cell %s: params %v, want rate 16", c.Name, c.Params)
		}
	}
}

// Each malformed search section is refused at its place, with the value
// and what was expected.
func TestSearchRefusals(t *testing.T) {
	for _, tc := range []struct{ search, want string }{
		{"{min: 1, max: 64, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:9: search: missing required key "step"`},
		{"{min: 8, max: 4, step: 1, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:23: search.max: 4 is not above min 8 (expected max > min)`},
		{"{min: 1, max: 4, step: 8, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:32: search.step: 8 is wider than the range 1..4 (expected a step of at most max - min)`},
		{"{min: 1, max: 4, step: 1, start: 9, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:42: search.start: 9 is outside 1..4 (expected min <= start <= max)`},
		{"{min: 1, max: 4, step: 0, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:32: search.step: "0" is not a number above 0`},
		{"{min: 1, max: 4, step: 1, repeats: 50, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:44: search.repeats: 50 is out of range (expected an integer from 2 to 20: the 95 % interval of a probe needs at least 2 repeats)`},
		{"{min: 1, max: 4, step: 1, repeats: 1, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:44: search.repeats: 1 is out of range (expected an integer from 2 to 20: the 95 % interval of a probe needs at least 2 repeats)`},
		{"{axis: concurrency, min: 1, max: 64, step: 0.5, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:52: search.step: 0.5 is not a whole number (expected whole numbers for axis concurrency: requests in flight)`},
		{"{axis: concurrency, min: 1.5, max: 64, step: 1, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:34: search.min: 1.5 is not a whole number (expected whole numbers for axis concurrency: requests in flight)`},
		{"{min: 1, max: 64, step: 1, start: 2.5, axis: concurrency, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:43: search.start: 2.5 is not a whole number (expected whole numbers for axis concurrency: requests in flight)`},
		{"{min: 1, max: 4, step: 1, axis: qps, slo: {ttft_p99_ms: 500}}", `sweep.yaml:3:41: search.axis: unknown value "qps" (expected one of: rate, concurrency)`},
		{"{min: 1, max: 4, step: 1, slo: {TTFT: 500}}", `sweep.yaml:3:41: search.slo: "TTFT" is not a metric name (expected lower-case letters, digits and '_', like ttft_p99_ms)`},
		{"{min: 1, max: 4, step: 1, slo: {ttft_p99_ms: -1}}", `sweep.yaml:3:54: search.slo.ttft_p99_ms: "-1" is not a number of at least 0`},
		{"{min: 1, max: 4, step: 1, slo: {}}", `sweep.yaml:3:40: search.slo: no objectives (expected at least one, like {ttft_p99_ms: 500})`},
	} {
		src := edit(t, "name: mini\n", "name: mini\nsearch: "+tc.search+"\n")
		if _, err := Parse("sweep.yaml", []byte(src)); err == nil || err.Error() != tc.want {
			t.Errorf("search: %s\n got: %v\nwant: %s", tc.search, err, tc.want)
		}
	}
	src := edit(t, "  case: [TC-01, TC-02]", "  case: [TC-01, TC-02]\n  rate: [\"1\"]")
	src = strings.Replace(src, "name: mini\n", "name: mini\nsearch: {min: 1, max: 4, step: 1, slo: {ttft_p99_ms: 500}}\n", 1)
	if _, err := Parse("sweep.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "matrix.rate: the search sets this parameter of every cell") {
		t.Errorf("a matrix with the load axis: %v", err)
	}
}

// A fractional load is a rate's, never a concurrency's: on that axis every
// load the search can probe, from the default start on, is whole.
func TestSearchConcurrencyWhole(t *testing.T) {
	src := edit(t, "name: mini\n", "name: mini\nsearch: {axis: concurrency, min: 1, max: 30, step: 3, slo: {ttft_p99_ms: 500}}\n")
	s, err := Parse("sweep.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Search.Start != 7 {
		t.Errorf("default start %g, want 7 (a quarter of 30 on the grid 1, 4, 7, ...)", s.Search.Start)
	}
	for x := 0.0; x <= 31; x += 0.25 {
		if v := s.Search.Snap(x); v != math.Trunc(v) {
			t.Fatalf("Snap(%g) = %g, not whole", x, v)
		}
	}
}

// Rebuild builds a cell at another load and repeat as Expand would have:
// the same id, name and templated command line.
func TestRebuild(t *testing.T) {
	spec := func(rate string) *Spec {
		src := edit(t, "name: mini\n", "name: mini\nsearch: {min: 1, max: 64, step: 1, start: "+rate+", slo: {ttft_p99_ms: 500}}\n")
		src = strings.Replace(src, "command: [", "command: [\"--rate={{.Params.rate}}\", ", 1)
		s, err := Parse("sweep.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base, want := spec("16"), spec("24")
	cells, err := Expand(base)
	if err != nil {
		t.Fatal(err)
	}
	wantCells, err := Expand(want)
	if err != nil {
		t.Fatal(err)
	}
	var in []Cell
	for _, c := range cells {
		p := maps.Clone(c.Params)
		p["rate"] = "24"
		in = append(in, Cell{Params: p, Cases: c.Cases})
	}
	got, err := Rebuild(base, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(wantCells) {
		t.Fatalf("%d cells, want %d", len(got), len(wantCells))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], wantCells[i]) {
			t.Errorf("cell %d:\n got %+v\nwant %+v", i, got[i], wantCells[i])
		}
		if !slices.Contains(got[i].Argv, "--rate=24") {
			t.Errorf("cell %d: argv %q lacks the load", i, got[i].Argv)
		}
	}
}
