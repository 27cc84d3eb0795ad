package reports

import "github.com/kvsweep/kvsweep/internal/testing/runtest"

// collected collects a committed sweep (internal/testing/runtest).
var collected = runtest.Collected
