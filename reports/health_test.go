package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/gpuhealth"
	"github.com/kvsweep/kvsweep/testrun"
)

func healthRun() *testrun.Run {
	fault := &gpuhealth.Report{Node: "n1", Changes: []gpuhealth.Change{
		{GPU: 0, UUID: "GPU-a", Counter: "nvlink.replay_errors", Before: 0, After: 12, Fault: true},
		{GPU: 0, UUID: "GPU-a", Counter: "ecc_errors.volatile.sram_correctable", Before: 1, After: 3},
	}}
	return &testrun.Run{ID: "health-1", Cells: []testrun.CellResult{
		{Name: "bad", Outcome: testrun.Invalid, Class: testrun.ClassInfra, Detail: "the GPUs failed under the cell " + fault.Evidence(), Health: fault},
		{Name: "retried", Outcome: testrun.OK, Nodes: "n2", Health: &gpuhealth.Report{Node: "n2", Note: "kernel log not readable: Xids unknown"},
			Earlier: []testrun.Attempt{{State: "COMPLETED", Nodes: "n1", Class: testrun.ClassInfra, GPUFault: &gpuhealth.Report{Node: "n1", Changes: []gpuhealth.Change{{GPU: 1, Counter: "xid", After: 1, Fault: true}}}}}},
		{Name: "quiet", Outcome: testrun.OK, Health: &gpuhealth.Report{Node: "n3", Note: "kernel log not readable: Xids unknown"}},
		{Name: "plain", Outcome: testrun.OK},
	}}
}

// The summary's GPU health section: a row a GPU and counter with before →
// after and FAULT, the earlier attempt whose GPUs failed, the notes; the
// HTML page and JSON carry the same; a run without health has no section.
func TestHealthReports(t *testing.T) {
	r := healthRun()
	var b bytes.Buffer
	if err := WriteSummary(&b, "markdown", r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"### GPU health", "| bad  | n1   | 0   | nvlink.replay_errors                 | 0 → 12         | FAULT |",
		"| bad  | n1   | 0   | ecc_errors.volatile.sram_correctable | 1 → 3          |       |",
		"- retried: an earlier attempt's GPUs failed under it on n1: GPU 1: xid 0→1", "- kernel log not readable: Xids unknown (retried, quiet)\n",
		"OK (after 1 infra retry: COMPLETED on n1)"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	b.Reset()
	if err := WriteHTML(&b, []*testrun.Run{r}, "t"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<tr class="health">`, "GPU 0 (GPU-a): nvlink.replay_errors 0→12 — FAULT", "an earlier attempt&#39;s GPUs failed under it on n1: GPU 1: xid 0→1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the HTML page has no %q", want)
		}
	}
	b.Reset()
	if err := WriteSummary(&b, "json", r); err != nil {
		t.Fatal(err)
	}
	var back testrun.Run
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Cells[0].Health == nil || back.Cells[0].Health.Changes[0].After != 12 ||
		back.Cells[1].Earlier[0].GPUFault == nil {
		t.Errorf("JSON: %v %s", err, b.String())
	}
	b.Reset()
	r.Cells = r.Cells[3:]
	if err := WriteSummary(&b, "markdown", r); err != nil || strings.Contains(b.String(), "GPU health") {
		t.Errorf("a run without health: %v\n%s", err, b.String())
	}
}

// kvsweep nodes names the counters that rose on a node's GPUs.
func TestNodesGPUCounters(t *testing.T) {
	run := healthRun()
	run.CollectedAt = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := WriteNodes(&b, "table", analysis.BadNodes([]*testrun.Run{run}, time.Time{})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "GPU_FAULT x2 (nvlink.replay_errors x1, xid x1)") {
		t.Errorf("kvsweep nodes:\n%s", b.String())
	}
}
