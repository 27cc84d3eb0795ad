package reports

import "github.com/kvsweep/kvsweep/internal/runtest"

// collected collects a committed sweep (internal/runtest).
var collected = runtest.Collected
