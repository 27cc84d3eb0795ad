package testrun

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/kvsweep/kvsweep/gpuhealth"
	"github.com/kvsweep/kvsweep/sweep"
)

// addHealth records what rose on the cell's GPUs during its last attempt
// (its job's health-before.json and health-after.json compared), and
// which earlier attempts' GPUs failed under them (gpu-faults.jsonl). A
// rise that means the hardware failed makes the cell INVALID (its figures
// were measured on failing hardware) with the evidence in its detail, and
// classify makes it an infra failure.
func addHealth(cr *CellResult, files *sweep.CellFiles) {
	if cr.Outcome == NotFinished {
		return
	}
	last := lastHealth(files)
	cr.Health = last
	markEarlier(cr, files, last)
	if last == nil || len(last.Faults()) == 0 {
		return
	}
	why := "the GPUs failed under the cell " + last.Evidence()
	if cr.Detail != "" {
		why += "; " + cr.Detail
	}
	if cr.Outcome == OK {
		cr.Outcome = Invalid
	}
	cr.Detail = why
}

// lastHealth compares the last attempt's two snapshots: nil when the job
// took none, when neither saw a GPU, or when nothing rose and nothing is
// noted; a note when one is missing or unreadable.
func lastHealth(files *sweep.CellFiles) *gpuhealth.Report {
	if !files.Has(sweep.HealthBeforeFile) && !files.Has(sweep.HealthAfterFile) {
		return nil
	}
	var snaps [2]*gpuhealth.Snapshot
	for i, name := range []string{sweep.HealthBeforeFile, sweep.HealthAfterFile} {
		b, err := files.ReadFile(name, gpuhealth.MaxSnapshotSize)
		if err == nil {
			snaps[i], err = gpuhealth.ReadSnapshot(b)
		}
		if err != nil {
			return &gpuhealth.Report{Note: name + " not read: " + err.Error()}
		}
	}
	if len(snaps[0].GPUs) == 0 && len(snaps[1].GPUs) == 0 {
		return nil // no GPU seen: the hardware fingerprint says why
	}
	r := gpuhealth.Compare(snaps[0], snaps[1])
	if len(r.Changes) == 0 && r.Note == "" {
		return nil
	}
	return &r
}

// markEarlier gives each line of gpu-faults.jsonl that is not the last
// attempt's to the oldest earlier attempt on its node that has none: that
// attempt failed outside the test, with the line as its evidence.
func markEarlier(cr *CellResult, files *sweep.CellFiles, last *gpuhealth.Report) {
	if len(cr.Earlier) == 0 {
		return
	}
	b, ok := optional(files, sweep.HealthFaultsLog, sweep.MaxFaultsLog)
	if !ok {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, sweep.MaxFaultsLog)
	for sc.Scan() {
		r, err := gpuhealth.ReadReport(sc.Bytes())
		if err != nil || len(r.Faults()) == 0 || (last != nil && r.JobID != "" && r.JobID == last.JobID) {
			continue
		}
		for i := range cr.Earlier {
			a := &cr.Earlier[i]
			if a.GPUFault == nil && r.Node != "" && onNode(a.Nodes, r.Node) {
				a.GPUFault, a.Class = r, ClassInfra
				break
			}
		}
	}
}

// onNode says whether a node list ("n1", "n[1-2]" as Slurm writes it, or
// "n1,n2") names node: plainly, or as a list this check cannot expand.
func onNode(nodes, node string) bool {
	for _, n := range strings.Split(nodes, ",") {
		if n == node {
			return true
		}
	}
	return strings.Contains(nodes, "[")
}
