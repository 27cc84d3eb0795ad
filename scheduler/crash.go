package scheduler

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// CrashAt names the step of a submission at which the process kills
// itself: "STEP", or "STEP:N" for the Nth time the step is reached. It
// exists for the crash-recovery tests (cmd/kvsweep sets it from
// $KVSWEEP_TEST_CRASH_AT) and is empty otherwise.
var CrashAt string

// crashHook kills the process at a named step when CrashAt says so, and
// does nothing otherwise.
func crashHook(step string) {
	spec := CrashAt
	if spec == "" {
		return
	}
	name, nth, _ := strings.Cut(spec, ":")
	if name != step {
		return
	}
	n := 1
	if nth != "" {
		n, _ = strconv.Atoi(nth)
	}
	crashMu.Lock()
	crashCounts[step]++
	if crashCounts[step] == n {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	crashMu.Unlock()
}

var (
	crashMu     sync.Mutex
	crashCounts = map[string]int{}
)
