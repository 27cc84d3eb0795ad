package testrun

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/sweep"
)

const (
	healthBefore = `{"node":"n1","job_id":"7","t":1,"gpus":[{"index":0,"uuid":"GPU-a","pci":"00000000:3B:00.0","counters":{"nvlink.replay_errors":0,"ecc_errors.volatile.dram_correctable":1}}],"xid_read":true}`
	healthAfter  = `{"node":"n1","job_id":"7","t":2,"gpus":[{"index":0,"uuid":"GPU-a","pci":"00000000:3B:00.0","counters":{"nvlink.replay_errors":12,"ecc_errors.volatile.dram_correctable":3}}],"xid_read":true,` +
		`"xid":[{"pci":"0000:3b:00","code":79,"line":"[ 9.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."}]}`
)

// A cell that passed while its GPU logged an Xid and NVLink replay errors
// is INVALID, an infra failure, its detail naming the GPU, the counters
// and before→after; a cell whose GPU only corrected ECC errors keeps its
// verdict and shows the rise; an earlier attempt whose GPUs failed
// (gpu-faults.jsonl) is an infra failure with that evidence; all of it
// survives results.json.
func TestCollectHealth(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	m, err := sweep.ReadManifest(dir)
	sweeptest.Must(t, err)
	byName := map[string]string{}
	for _, c := range m.Cells {
		byName[c.Name] = c.ID
	}
	faulty, fine := byName["vllm-aggregated-qwen3.5-4b-sim-pass"], byName["vllm-aggregated-qwen3.5-4b-sim-sleep-30"]
	if faulty == "" || fine == "" {
		t.Fatalf("the mixed sweep's cells: %v", byName)
	}
	plain, err := Collect(sweeptest.Copy(t, "mixed"), CollectOptions{})
	sweeptest.Must(t, err)
	var fineWas CellResult
	for _, c := range plain.Cells {
		if c.CellID == fine {
			fineWas = c
		}
	}
	write := func(id, name, text string) {
		sweeptest.Must(t, os.WriteFile(filepath.Join(dir, "cells", id, name), []byte(text), 0o644))
	}
	write(faulty, sweep.HealthBeforeFile, healthBefore)
	write(faulty, sweep.HealthAfterFile, healthAfter)
	corrected := strings.Replace(strings.Replace(healthAfter, `"nvlink.replay_errors":12`, `"nvlink.replay_errors":0`, 1), `,"xid":[{`, `,"x":[{`, 1)
	write(fine, sweep.HealthBeforeFile, healthBefore)
	write(fine, sweep.HealthAfterFile, corrected)
	write(fine, sweep.HealthFaultsLog, `{"node":"n9","job_id":"3","changes":[{"gpu":1,"uuid":"GPU-z","counter":"xid","before":0,"after":1,"fault":true}]}`+"\n")
	states := map[string]sweep.CellState{fine: {TaskState: sweep.TaskState{State: "COMPLETED", Nodes: "n1"}, Attempts: 2,
		Earlier: []sweep.TaskState{{State: "COMPLETED", Nodes: "n9"}}}}
	run, err := Collect(dir, CollectOptions{States: states})
	sweeptest.Must(t, err)
	for _, c := range run.Cells {
		switch c.CellID {
		case faulty:
			want := "the GPUs failed under the cell on n1: GPU 0 (GPU-a): nvlink.replay_errors 0→12; GPU 0 (GPU-a): xid 0→1 (Xid 79: "
			if c.Outcome != Invalid || c.Class != ClassInfra || !strings.HasPrefix(c.Detail, want) {
				t.Errorf("%s: %s [%s] %q, want INVALID [infra] %q...", c.Name, c.Outcome, c.Class, c.Detail, want)
			}
			if !strings.Contains(OutcomeText(c), "[infra]") {
				t.Errorf("outcome text %q", OutcomeText(c))
			}
		case fine:
			if c.Outcome != fineWas.Outcome || c.Class != fineWas.Class || c.Health == nil || len(c.Health.Changes) != 1 || c.Health.Changes[0].String() != "GPU 0 (GPU-a): ecc_errors.volatile.dram_correctable 1→3" {
				t.Errorf("%s: %s [%s] %+v", c.Name, c.Outcome, c.Class, c.Health)
			}
			if len(c.Earlier) != 1 || c.Earlier[0].Class != ClassInfra || c.Earlier[0].GPUFault == nil || c.Earlier[0].GPUFault.Evidence() != "on n9: GPU 1 (GPU-z): xid 0→1" {
				t.Errorf("%s: earlier attempts %+v", c.Name, c.Earlier)
			}
			if got := RetriesText(c); got != " (after 1 infra retry: COMPLETED on n9)" {
				t.Errorf("retries text %q", got)
			}
		default:
			if c.Health != nil {
				t.Errorf("%s: health without snapshots: %+v", c.Name, c.Health)
			}
		}
	}
	sweeptest.Must(t, WriteRun(dir, run))
	back, err := ReadRun(dir)
	sweeptest.Must(t, err)
	for i := range run.Cells {
		if !reflect.DeepEqual(run.Cells[i].Health, back.Cells[i].Health) || !reflect.DeepEqual(run.Cells[i].Earlier, back.Cells[i].Earlier) {
			t.Errorf("%s: results.json gives %+v, collect %+v", run.Cells[i].Name, back.Cells[i].Health, run.Cells[i].Health)
		}
	}
}

// A snapshot that is a link out of the sweep, or not JSON, is a note on
// the cell, never read and never a fault.
func TestCollectHealthHostile(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	m, err := sweep.ReadManifest(dir)
	sweeptest.Must(t, err)
	id := m.Cells[0].ID
	outside := filepath.Join(t.TempDir(), "secret.json")
	sweeptest.Must(t, os.WriteFile(outside, []byte(healthAfter), 0o644))
	sweeptest.Must(t, os.Symlink(outside, filepath.Join(dir, "cells", id, sweep.HealthAfterFile)))
	sweeptest.Must(t, os.WriteFile(filepath.Join(dir, "cells", id, sweep.HealthBeforeFile), []byte("{"), 0o644))
	run, err := Collect(dir, CollectOptions{})
	sweeptest.Must(t, err)
	c := run.Cells[0]
	if c.Health == nil || !strings.HasPrefix(c.Health.Note, "health-before.json not read: ") || c.Class == ClassInfra && c.Outcome == Invalid {
		t.Errorf("%s: %+v", c.Name, c.Health)
	}
	sweeptest.Must(t, os.WriteFile(filepath.Join(dir, "cells", id, sweep.HealthBeforeFile), []byte(healthBefore), 0o644))
	run, err = Collect(dir, CollectOptions{})
	sweeptest.Must(t, err)
	if h := run.Cells[0].Health; h == nil || !strings.HasPrefix(h.Note, "health-after.json not read: ") {
		t.Errorf("a link out of the sweep: %+v", h)
	}
}
