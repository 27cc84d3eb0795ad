package testrun

import (
	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/sweep"
)

// addGPU summarises what the cell's GPUs did (spec telemetry.gpu): each
// GPU's figures from the samples its job wrote, or why there are none.
func addGPU(cr *CellResult, files *sweep.CellFiles, m *sweep.Manifest) {
	if m.Telemetry == nil || m.Telemetry.GPUIntervalMS == 0 {
		return
	}
	b, ok := optional(files, sweep.GPUSamplesFile, gpustat.MaxFile)
	if !ok {
		if cr.Started != "" {
			cr.GPU = &gpustat.Summary{Note: "no " + sweep.GPUSamplesFile}
		}
		return
	}
	sum := gpustat.Summarize(b)
	cr.GPU = &sum
}
