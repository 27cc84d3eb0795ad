package lane

import (
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
)

// The lane's tests run cells on the local executor, which the command
// registers in a real build.
func init() { scheduler.Register("local", local.Open) }
