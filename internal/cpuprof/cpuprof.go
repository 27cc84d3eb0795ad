// Package cpuprof is the CPU profile of one kvsweep command, taken when
// KVSWEEP_CPUPROFILE names a file (go tool pprof reads it: where a real
// command's time goes, docs/performance.md).
package cpuprof

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// Start starts a CPU profile of the command when KVSWEEP_CPUPROFILE
// names a file (go tool pprof reads it: where a real command's time goes,
// docs/performance.md); the returned func stops and writes it.
func Start(stderr io.Writer) (stop func()) {
	path := os.Getenv("KVSWEEP_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "kvsweep: KVSWEEP_CPUPROFILE: %v\n", err)
		if f != nil {
			f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "kvsweep: KVSWEEP_CPUPROFILE: %v\n", err)
		}
	}
}
