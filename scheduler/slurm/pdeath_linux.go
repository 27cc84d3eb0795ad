package slurm

import (
	"os/exec"
	"runtime"
	"syscall"
)

// runTied runs cmd so that the kernel kills it when kvsweep dies: its
// parent-death signal fires when the thread that started it ends, so the
// goroutine stays on that thread until cmd has ended.
func runTied(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Run()
}
