package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/internal/testing/golden"
)

// rep is one repeat with the well-known figures.
func rep(run string, thr, ttft, itl float64) frontier.Repeat {
	return frontier.Repeat{Run: run, Cell: "c", Verdict: "PASS", Figures: map[string]float64{
		frontier.Throughput: thr, frontier.TTFTP99: ttft, frontier.ITLP99: itl, frontier.Failed: 0}}
}

// stats is a probe's figures over three repeats as the search gives them.
func stats(thr, thrLo, thrHi, ttft, itl float64) map[string]frontier.Stat {
	return map[string]frontier.Stat{
		frontier.Throughput: {N: 3, Mean: thr, Low: thrLo, High: thrHi, SD: 0.1},
		frontier.TTFTP99:    {N: 3, Mean: ttft, Low: ttft - 10, High: ttft + 10, SD: 5},
		frontier.ITLP99:     {N: 3, Mean: itl, Low: itl - 1, High: itl + 1, SD: 0.5},
		frontier.Failed:     {N: 3},
	}
}

func probe(round int, load float64, st map[string]frontier.Stat, broken ...string) frontier.Probe {
	p := frontier.Probe{Round: round, Load: load, Stats: st, Meets: len(broken) == 0, Broken: broken}
	for i := range 3 {
		t := st[frontier.Throughput].Mean
		p.Repeats = append(p.Repeats, rep("r"+string(rune('1'+i)), t, st[frontier.TTFTP99].Mean, st[frontier.ITLP99].Mean))
	}
	return p
}

var testSLO = []frontier.SLO{{Metric: frontier.TTFTP99, Max: 500}, {Metric: frontier.ITLP99, Max: 50}, {Metric: frontier.Failed, Max: 0}}

// kvcrFrontier is a hand-made search of three cells. In vllm-1p1d-isl2k
// the probes (throughput req/s at TTFT p99 ms) are 2.0@110 (its Stats
// left out: the means of its repeats 1.9, 2.0, 2.1 and 100, 110, 120),
// 3.9@150, 7.6@300, 9.0@900 (broken, noisy), 10.5@480, 10.2@650
// (broken): 9.0@900 and 10.2@650 are dominated by 10.5@480, so the
// frontier is the loads 2, 4, 8 and 12; the operating point is 12
// in [11.6, 12.4]: "12.0 ± 0.4 req/s".
func kvcrFrontier() *frontier.Frontier {
	first := frontier.Probe{Round: 1, Load: 2, Meets: true, Repeats: []frontier.Repeat{
		rep("p1-a", 1.9, 100, 20), rep("p1-b", 2.0, 110, 21), rep("p1-c", 2.1, 120, 22)}}
	return &frontier.Frontier{Version: frontier.Version, Name: "llama-8b", Label: "kvcr", Axis: frontier.Rate, SLO: testSLO, Repeats: 3,
		Stopped: "--max-probes 12 reached",
		Cells: []frontier.Cell{
			{ID: "vllm-1p1d-isl2k", Probes: []frontier.Probe{
				first,
				probe(2, 4, stats(3.9, 3.8, 4.0, 150, 25)),
				probe(3, 8, stats(7.6, 7.4, 7.8, 300, 30)),
				func() frontier.Probe {
					p := probe(4, 16, stats(9.0, 8.0, 10.0, 900, 80), "ttft_p99_ms 900 > 500", "itl_p99_ms 80 > 50")
					p.Noisy = true
					return p
				}(),
				probe(5, 12, stats(10.5, 10.3, 10.7, 480, 45)),
				probe(6, 14, stats(10.2, 10.0, 10.4, 650, 60), "ttft_p99_ms 650 > 500", "itl_p99_ms 60 > 50"),
			}, Point: &frontier.Point{Load: 12, Low: 11.6, High: 12.4, MinDetectable: 0.8,
				Throughput: frontier.Stat{N: 3, Mean: 10.5, Low: 10.3, High: 10.7, SD: 0.08}}},
			{ID: "sglang-1p1d-isl2k", Name: "sglang-1p1d-g", Probes: []frontier.Probe{probe(1, 2, stats(1.5, 1.4, 1.6, 700, 40), "ttft_p99_ms 700 > 500")},
				Note: "the lowest load probed broke ttft_p99_ms"},
			{ID: "vllm-1p1d-isl512", Probes: []frontier.Probe{probe(1, 4, stats(3.9, 3.8, 4.0, 200, 20)), probe(2, 8, stats(6.0, 5.5, 6.5, 700, 60), "ttft_p99_ms 700 > 500"),
				probe(3, 6, stats(5.6, 5.4, 5.8, 560, 52), "ttft_p99_ms 560 > 500", "itl_p99_ms 52 > 50"), probe(4, 5, stats(4.9, 4.8, 5.0, 420, 40))},
				Point: &frontier.Point{Load: 5, Low: 4.6, High: 5.4, Throughput: frontier.Stat{N: 3, Mean: 4.9, Low: 4.8, High: 5.0}}},
			{ID: "vllm-2p1d-isl2k", Note: "budget reached", Probes: []frontier.Probe{{Round: 1, Load: 8, Infra: true,
				Repeats: []frontier.Repeat{{Run: "round-01", Cell: "c9", Verdict: "INFRA"}}}}},
		}}
}

// bareFrontier is the bare-vLLM arm of the same spec: vllm-1p1d-isl2k
// operates at 6.6 in [6.3, 6.9], so KVCR serves 12/6.6 = 1.8x the rate;
// vllm-1p1d-isl512 at 4.8 in [4.5, 5.1], overlapping KVCR's [4.6, 5.4];
// vllm-1p1d-isl8k only this side searched.
func bareFrontier() *frontier.Frontier {
	return &frontier.Frontier{Version: frontier.Version, Name: "llama-8b", Label: "bare-vllm", Axis: frontier.Rate, SLO: testSLO, Repeats: 3,
		Cells: []frontier.Cell{
			{ID: "vllm-1p1d-isl2k", Probes: []frontier.Probe{
				probe(1, 2, stats(2.0, 1.9, 2.1, 130, 22)),
				probe(2, 4, stats(3.9, 3.7, 4.1, 250, 28)),
				probe(3, 8, stats(6.1, 5.9, 6.3, 800, 70), "ttft_p99_ms 800 > 500"),
				probe(4, 6, stats(5.8, 5.6, 6.0, 420, 40)),
				probe(5, 7, stats(6.0, 5.8, 6.2, 560, 48), "ttft_p99_ms 560 > 500"),
				probe(6, 6.6, stats(6.3, 6.1, 6.5, 470, 44)),
			}, Point: &frontier.Point{Load: 6.6, Low: 6.3, High: 6.9, MinDetectable: 0.6,
				Throughput: frontier.Stat{N: 3, Mean: 6.3, Low: 6.1, High: 6.5}}},
			{ID: "vllm-1p1d-isl512", Probes: []frontier.Probe{probe(1, 4, stats(3.8, 3.7, 3.9, 260, 22)), probe(2, 4.8, stats(4.6, 4.5, 4.7, 450, 35))},
				Point: &frontier.Point{Load: 4.8, Low: 4.5, High: 5.1, Throughput: frontier.Stat{N: 3, Mean: 3.8, Low: 3.7, High: 3.9}}},
			{ID: "vllm-1p1d-isl8k", Probes: []frontier.Probe{probe(1, 3.2, stats(3.1, 3.0, 3.2, 400, 30))},
				Point: &frontier.Point{Load: 3.2, Low: 3.0, High: 3.4, Throughput: frontier.Stat{N: 3, Mean: 3.1, Low: 3.0, High: 3.2}}},
		}}
}

func frontierOut(t *testing.T, format Format, base, cand *frontier.Frontier) string {
	t.Helper()
	var b bytes.Buffer
	var err error
	if base == nil {
		err = WriteFrontier(&b, format, cand)
	} else {
		err = WriteFrontierComparison(&b, format, base, cand)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The search's report and the comparison of two, in every text format,
// against goldens whose figures the fixtures' comments work out.
func TestFrontierGolden(t *testing.T) {
	for _, f := range []Format{Markdown, Table, CSV, JSON} {
		golden.Check(t, filepath.Join("testdata", "golden", "frontier."+string(f)), []byte(frontierOut(t, f, nil, kvcrFrontier())))
		golden.Check(t, filepath.Join("testdata", "golden", "frontier-compare."+string(f)), []byte(frontierOut(t, f, bareFrontier(), kvcrFrontier())))
	}
}

// What a reader of the report sees of each cell: the operating point as
// load ± half-interval, the probes on the frontier and the operating one.
func TestFrontierReportFigures(t *testing.T) {
	r := NewFrontierReport(kvcrFrontier())
	c := r.Cells[0]
	if c.PointText != "12.0 ± 0.4 req/s" {
		t.Errorf("operating point %q, want 12.0 ± 0.4 req/s", c.PointText)
	}
	var front, op []float64
	for _, p := range c.Probes {
		if p.Frontier {
			front = append(front, p.Load)
		}
		if p.Operating {
			op = append(op, p.Load)
		}
	}
	if !equalFloats(front, []float64{2, 4, 8, 12}) || !equalFloats(op, []float64{12}) {
		t.Errorf("frontier at loads %v, operating %v; want [2 4 8 12] and [12]", front, op)
	}
	if s := c.Probes[0].Figures[frontier.Throughput]; s.N != 3 || math.Abs(s.Mean-2.0) > 1e-9 {
		t.Errorf("throughput of the probe without Stats: %+v, want the mean of its repeats, 2.0 over 3", s)
	}
	if r.Cells[1].PointText != "none" || r.Cells[3].PointText != "none" {
		t.Errorf("cells without a point say %q and %q", r.Cells[1].PointText, r.Cells[3].PointText)
	}
	for _, tc := range []struct {
		p    frontier.Point
		want string
	}{
		{frontier.Point{Load: 6.6, Low: 6.3, High: 6.9}, "6.6 ± 0.3"},
		{frontier.Point{Load: 120, Low: 100, High: 140}, "120 ± 20"},
		{frontier.Point{Load: 3.25, Low: 3.1, High: 3.4}, "3.25 ± 0.15"},
		{frontier.Point{Load: 8, Low: 8, High: 8}, "8 ± 0"},
		// A search's usual point: the highest load that met, at the
		// interval's low end.
		{frontier.Point{Load: 16, Low: 16, High: 17}, "16 (16–17)"},
		{frontier.Point{Load: 12, Low: 11, High: 14}, "12 (11–14)"},
	} {
		if got := pmText(&tc.p); got != tc.want {
			t.Errorf("%+v reads %q, want %q", tc.p, got, tc.want)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The comparison's sentence per cell, cells matched by id, a cell only
// one side searched said as such, overlapping intervals said.
func TestFrontierComparisonSentences(t *testing.T) {
	c, err := CompareFrontiers(bareFrontier(), kvcrFrontier())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"vllm-1p1d-isl2k":                   "kvcr serves 1.8x the rate within the SLO: 12.0 ± 0.4 vs 6.6 ± 0.3 req/s",
		"vllm-1p1d-isl512":                  "kvcr serves 1.0x the rate within the SLO: 5.0 ± 0.4 vs 4.8 ± 0.3 req/s (the 95 % intervals overlap: the repeats do not establish a difference)",
		"vllm-1p1d-isl8k":                   "only bare-vllm searched this cell: 3.2 ± 0.2 req/s",
		"sglang-1p1d-g (sglang-1p1d-isl2k)": "only kvcr searched this cell: no operating point (the lowest load probed broke ttft_p99_ms)",
		"vllm-2p1d-isl2k":                   "only kvcr searched this cell: no operating point (budget reached)",
	}
	if len(c.Cells) != len(want) {
		t.Errorf("%d cells compared, want %d", len(c.Cells), len(want))
	}
	for _, p := range c.Cells {
		if p.Sentence != want[p.Cell] {
			t.Errorf("%s: %q\nwant %q", p.Cell, p.Sentence, want[p.Cell])
		}
	}
	// The same search on both sides: the labels say which is which.
	same, err := CompareFrontiers(kvcrFrontier(), kvcrFrontier())
	if err != nil {
		t.Fatal(err)
	}
	if s := same.Cells[0].Sentence; s != "the candidate (kvcr) serves 1.0x the rate within the SLO: 12.0 ± 0.4 vs 12.0 ± 0.4 req/s (the 95 % intervals overlap: the repeats do not establish a difference)" {
		t.Errorf("a search against itself: %q", s)
	}
	conc := kvcrFrontier()
	conc.Axis = frontier.Concurrency
	if _, err := CompareFrontiers(bareFrontier(), conc); err == nil || !strings.Contains(err.Error(), "varies rate and the candidate concurrency") {
		t.Errorf("searches of different axes compared: %v", err)
	}
	slo := kvcrFrontier()
	slo.SLO = slo.SLO[:1]
	out := frontierOut(t, Markdown, bareFrontier(), slo)
	if !strings.Contains(out, "The searches judged by different SLOs (bare-vllm: ttft_p99_ms ≤ 500, itl_p99_ms ≤ 50, failed ≤ 0; kvcr: ttft_p99_ms ≤ 500)") {
		t.Errorf("different SLOs not said:\n%s", out)
	}
}

// A frontier's hostile values are refused naming the value, where it is
// and what was expected: a NaN the search computed, counts past the
// bounds, a number past float64 and a link in the file, each with the
// file's line and column.
func TestFrontierHostile(t *testing.T) {
	nan := kvcrFrontier()
	nan.Cells[0].Probes[1].Stats[frontier.TTFTP99] = frontier.Stat{N: 3, Mean: math.NaN()}
	err := WriteFrontier(&bytes.Buffer{}, Markdown, nan)
	if err == nil || err.Error() != "/cells/0/probes/1/stats/ttft_p99_ms/mean: NaN, expected a finite number" {
		t.Errorf("a NaN: %v", err)
	}
	dup := kvcrFrontier()
	dup.Cells[2].ID = dup.Cells[0].ID
	if err := WriteFrontier(&bytes.Buffer{}, JSON, dup); err == nil || !strings.Contains(err.Error(), `/cells/2/id: "vllm-1p1d-isl2k", expected each cell once (also /cells/0)`) {
		t.Errorf("a cell twice: %v", err)
	}
	if err := WriteFrontier(&bytes.Buffer{}, JUnit, kvcrFrontier()); err == nil || !strings.Contains(err.Error(), "markdown, table, csv, json or html") {
		t.Errorf("junit: %v", err)
	}

	dir := t.TempDir()
	if err := frontier.Write(dir, kvcrFrontier()); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, frontier.FileName))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, frontier.FileName)
	for _, tc := range []struct{ name, old, new, want string }{
		{"huge repeats", `"repeats": 3,`, `"repeats": 99999999,`, path + ":20:14: /repeats: 99999999, expected 0 to 1000"},
		{"past float64", `"load": 2,`, `"load": 1e999,`, path + ":27:19: cells.probes.load: number 1e999, expected a float64"},
		{"negative load", `"load": 4,`, `"load": -4,`, path + ":67:19: /cells/0/probes/1/load: -4, expected a number at least 0"},
		{"bad axis", `"axis": "rate"`, `"axis": "rps"`, path + ":5:11: /axis: \"rps\", expected \"rate\" or \"concurrency\""},
		{"not JSON", `"cells": [`, `"cells": [}`, path + ":21:13: not JSON: invalid character '}' looking for beginning of value"},
	} {
		bad := strings.Replace(string(good), tc.old, tc.new, 1)
		if bad == string(good) {
			t.Fatalf("%s: %q not in the file", tc.name, tc.old)
		}
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFrontier(dir)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
	link := t.TempDir()
	if err := os.Symlink(path, filepath.Join(link, frontier.FileName)); err != nil {
		t.Fatal(err)
	}
	if !IsSearchDir(link) {
		t.Error("a search directory whose frontier.json is a link is not one")
	}
	if _, err := ReadFrontier(link); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a link: %v", err)
	}
}

// Text from the search (cell ids, notes, labels) cannot run as markup, a
// formula or a terminal escape in any format.
func TestFrontierHostileText(t *testing.T) {
	f := kvcrFrontier()
	f.Label = `<img src=x onerror=alert(1)>`
	f.Cells[0].ID = `<script>alert("id")</script>` + hostile
	f.Cells[1].Note = hostile
	html := frontierOut(t, HTML, bareFrontier(), f)
	for _, raw := range []string{"<script>", "<img", "\x1b"} {
		if strings.Contains(html, raw) {
			t.Errorf("the page holds %q unescaped", raw)
		}
	}
	if !strings.Contains(html, "&lt;script&gt;alert(&#34;id&#34;)&lt;/script&gt;") {
		t.Error("the cell id is not on the page, escaped")
	}
	for _, format := range []Format{Markdown, Table} {
		out := frontierOut(t, format, nil, f)
		if strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%s: a control character reaches the terminal", format)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(frontierOut(t, CSV, nil, f))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		for _, field := range rec {
			if strings.HasPrefix(field, "=") {
				t.Errorf("a CSV field runs as a formula: %q", field)
			}
		}
	}
	var back FrontierReport
	if err := json.Unmarshal([]byte(frontierOut(t, JSON, nil, f)), &back); err != nil || back.Cells[1].Note != hostile {
		t.Errorf("JSON does not keep the note as it is: %v", err)
	}
}

// A search at the scale of a large matrix (1,000 cells of 20 probes of
// 5 repeats) reports in every format: the markdown fits a step summary,
// the page stays under 16 MiB (about 350 bytes a probe and 4 KB a chart).
func TestFrontierLarge(t *testing.T) {
	f := &frontier.Frontier{Version: frontier.Version, Name: "big", Axis: frontier.Concurrency, SLO: testSLO, Repeats: 5}
	for i := range 1000 {
		c := frontier.Cell{ID: "cell-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "-" + strconv.Itoa(i)}
		for j := range 20 {
			load := float64(1 + j)
			p := probe(j+1, load, stats(load*0.9, load*0.85, load*0.95, 20*load, 2*load))
			p.Meets = j < 12
			p.Repeats = append(p.Repeats, p.Repeats[:2]...)
			c.Probes = append(c.Probes, p)
		}
		c.Point = &frontier.Point{Load: 12, Low: 11, High: 13}
		f.Cells = append(f.Cells, c)
	}
	for _, format := range []Format{Markdown, Table, CSV, JSON, HTML} {
		out := frontierOut(t, format, nil, f)
		t.Logf("%s: %d bytes", format, len(out))
		if format == Markdown && len(out) > StepSummaryLimit {
			t.Errorf("markdown of %d bytes, over the step summary's %d", len(out), StepSummaryLimit)
		}
		if format == HTML && len(out) > 16<<20 {
			t.Errorf("a page of %d bytes", len(out))
		}
	}
	if got := NewFrontierReport(f).Cells[0].PointText; got != "12.0 ± 1.0 concurrent" {
		t.Errorf("a concurrency point reads %q", got)
	}
}

// One search's page: a chart per cell with probes, its one series, no
// baseline, the search's name in the title and its stop said.
func TestFrontierPageOneSearch(t *testing.T) {
	page := frontierOut(t, HTML, nil, kvcrFrontier())
	for _, want := range []string{"<title>kvsweep search: llama-8b (kvcr)</title>",
		"Stopped before every cell had its point: --max-probes 12 reached.",
		`<circle class="operating"`, `<path class="pareto"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<svg class="frontier"`); n != 3 {
		t.Errorf("%d charts, want one per cell with probes (3)", n)
	}
	if n := strings.Count(page, `<g class="series candidate">`); n != 3 || strings.Contains(page, `class="series baseline"`) {
		t.Errorf("%d series of the search, or a baseline drawn", n)
	}
	if n := strings.Count(page, `<circle class="probe broken`); n != 5 {
		t.Errorf("%d hollow probes, want the 5 that broke an SLO", n)
	}
}
