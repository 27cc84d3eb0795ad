package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/telemetry"
	"github.com/kvsweep/kvsweep/testrun"
)

// A 2P+1D cell's three workers get a row each in the summary and on the
// HTML page, with the figures they reported and "–" for one they did
// not; JSON carries the rows as the run has them; a one-worker cell gets
// no table.
func TestWorkerRows(t *testing.T) {
	tm := &telemetry.Summary{Samples: 9, Workers: []telemetry.Worker{
		{Case: "TC-01", Worker: "prefill-0", Role: "prefill", Node: "n1", Catalog: []string{"vllm-external", "vllm-v1"}, Figures: map[string]float64{"prefix_cache_hit_rate": 0.8, "kv_connector_hit_rate": 0.5}},
		{Case: "TC-01", Worker: "prefill-1", Role: "prefill", Node: "n2", Catalog: []string{"vllm-v1"}, Figures: map[string]float64{"prefix_cache_hit_rate": 0.6}},
		{Case: "TC-01", Worker: "decode-0", Role: "decode", Node: "n3", Catalog: []string{"vllm-v1"}, Figures: map[string]float64{"prefix_cache_hit_rate": 0.1}},
	}}
	one := &telemetry.Summary{Samples: 3, Workers: []telemetry.Worker{{Worker: "w", Figures: map[string]float64{"prefix_cache_hit_rate": 0.3}}}}
	r := &testrun.Run{ID: "s1", Cells: []testrun.CellResult{
		{CellID: "a", Name: "2p1d", Outcome: testrun.OK, Telemetry: tm},
		{CellID: "b", Name: "agg", Outcome: testrun.OK, Telemetry: one},
	}}
	var b bytes.Buffer
	if err := WriteSummary(&b, "markdown", r); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ") // the columns padded
	for _, want := range []string{"### Telemetry per worker", "| 2p1d | TC-01 | prefill-0 | prefill | n1 | 0.8 | 0.5 | – | – | vllm-external vllm-v1 |", "| 2p1d | TC-01 | decode-0 | decode | n3 | 0.1 | – |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "| agg |") && strings.Contains(out[strings.Index(out, "### Telemetry per worker"):], "| agg |") {
		t.Errorf("a one-worker cell has rows:\n%s", out)
	}
	b.Reset()
	if err := WriteHTML(&b, []*testrun.Run{r}, ""); err != nil {
		t.Fatal(err)
	}
	if h := b.String(); !strings.Contains(h, "<th>kv_connector_hit_rate</th>") || !strings.Contains(h, "<td>TC-01</td><td>prefill-1</td><td>prefill</td><td>n2</td><td>0.6</td><td>–</td>") {
		t.Errorf("the HTML page has no worker rows:\n%s", h)
	}
	b.Reset()
	if err := WriteSummary(&b, "json", r); err != nil {
		t.Fatal(err)
	}
	var back testrun.Run
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if w := back.Cells[0].Telemetry.Workers; len(w) != 3 || w[2].Worker != "decode-0" || w[2].Figures["prefix_cache_hit_rate"] != 0.1 {
		t.Errorf("JSON workers %+v", w)
	}
}
