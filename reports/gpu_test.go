package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/testrun"
)

// The summary shows a row a GPU of each cell that sampled its GPUs, "-"
// for what a GPU did not report, and the cells' notes; JSON carries the
// figures; a run without samples has no GPU section.
func TestGPUSummary(t *testing.T) {
	r := &testrun.Run{ID: "gpu-1", Cells: []testrun.CellResult{
		{Name: "vllm-agg", Outcome: "PASS", GPU: &gpustat.Summary{Samples: 4, GPUs: []gpustat.GPU{
			{Index: 0, UUID: "GPU-a", Samples: 2, PowerW: &gpustat.Stat{Mean: 400, Min: 300, Max: 500}, UtilPct: &gpustat.Stat{Mean: 95, Min: 90, Max: 100},
				MemUsedMiB: &gpustat.Stat{Mean: 70500, Min: 70000, Max: 71000}, MemTotalMiB: 81559, SMClockMHz: &gpustat.Stat{Mean: 1740, Min: 1500, Max: 1980},
				TempC: &gpustat.Stat{Mean: 65, Min: 60, Max: 70}},
			{Index: 1, Samples: 2},
		}}},
		{Name: "sglang-agg", Outcome: "PASS", GPU: &gpustat.Summary{Note: "no GPU samples: nvidia-smi is not on this node"}},
		{Name: "plain", Outcome: "PASS"},
	}}
	var b bytes.Buffer
	if err := WriteSummary(&b, "markdown", r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"### GPUs", "| vllm-agg | 0   | 2       | 400 / 500         | 95          | -               | 71000 / 81559           | 1740 / 1500     | 70          |",
		"| vllm-agg | 1   | 2       | -                 | -           | -               | -                       | -               | -           |",
		"- sglang-agg: no GPU samples: nvidia-smi is not on this node"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	b.Reset()
	if err := WriteSummary(&b, "json", r); err != nil {
		t.Fatal(err)
	}
	var back testrun.Run
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Cells[0].GPU.GPUs[0].PowerW.Max != 500 {
		t.Errorf("JSON: %v %+v", err, back.Cells[0].GPU)
	}
	r.Cells = r.Cells[2:]
	b.Reset()
	if err := WriteSummary(&b, "markdown", r); err != nil || strings.Contains(b.String(), "GPUs") {
		t.Errorf("a run without samples: %v\n%s", err, b.String())
	}
}
