package scheduler

import (
	"os/exec"
	"runtime"
	"syscall"
)

// dieWithParent has the kernel kill cmd when the thread that started it
// ends, which Run keeps alive until cmd has ended (it is locked to the
// goroutine that runs it): if kvsweep dies, cmd dies with it.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// lockThread keeps the calling goroutine on its thread until unlock is
// called, as dieWithParent needs while the command runs.
func lockThread() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
