//go:build !linux

package scheduler

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie a child's life
// to its parent's.
func dieWithParent(*exec.Cmd) {}

func lockThread() (unlock func()) { return func() {} }
