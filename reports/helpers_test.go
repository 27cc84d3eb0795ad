package reports

import "github.com/kvsweep/kvsweep/internal/runtest"

// The committed sweeps, collected (internal/runtest).
var (
	collected  = runtest.Collected
	collectDir = runtest.CollectDir
)
