package analysis

import "github.com/kvsweep/kvsweep/internal/testing/runtest"

// The committed sweeps, collected (internal/testing/runtest).
var (
	collected  = runtest.Collected
	collectDir = runtest.CollectDir
)
