package testrun

import (
	"strings"

	"github.com/kvsweep/kvsweep/sweep"
)

// platformRefused completes a cell whose job refused the node before the
// harness: the node is not of the image's platform (cluster.platform) and
// does not emulate it. It is NOT_STARTED, a failure outside the test,
// with the job's words naming both platforms. A cell that ran under
// emulation says so (Emulated).
func platformRefused(cr *CellResult, files *sweep.CellFiles) bool {
	if b, ok := optional(files, sweep.EmulatedFile, sweep.MaxMarkerSize); ok {
		cr.Emulated = strings.TrimSpace(string(b))
	}
	b, ok := optional(files, sweep.PlatformMismatchFile, sweep.MaxMarkerSize)
	if !ok {
		return false
	}
	cr.Outcome = NotStarted
	cr.Detail = "the node is not of the image's platform: " + strings.Join(strings.Fields(string(b)), " ")
	return true
}
