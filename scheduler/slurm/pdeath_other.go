//go:build !linux

package slurm

import "os/exec"

// runTied runs cmd; where the kernel cannot tie a child's life to its
// parent's, it may outlive kvsweep.
func runTied(cmd *exec.Cmd) error { return cmd.Run() }
