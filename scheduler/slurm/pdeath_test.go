//go:build linux

package slurm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Slurm command still running when kvsweep is killed (an sbatch in
// flight when submit dies) dies with it, so it cannot complete after the
// next submit has settled its intent. The test runs itself as the
// "kvsweep" whose command is a sleep, kills it, and waits for the sleep to
// go; a sleep that stays past a minute failed to die with its parent.
func TestSlurmCommandDiesWithKvsweep(t *testing.T) {
	if arg := os.Getenv("KVSWEEP_TEST_TIED_SLEEP"); arg != "" {
		_, _ = (&Slurm{}).exec1(context.Background(), "", "sleep", "3600", arg)
		os.Exit(0)
	}
	// A second argument no other process has: the sleep is found by it.
	mark := fmt.Sprintf("0.%09d", time.Now().UnixNano()%1e9)
	self := exec.Command(os.Args[0], "-test.run=^TestSlurmCommandDiesWithKvsweep$")
	self.Env = append(os.Environ(), "KVSWEEP_TEST_TIED_SLEEP="+mark)
	if err := self.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("pkill", "-f", "sleep 3600 "+mark).Run() })
	running := func() bool { return exec.Command("pgrep", "-f", "sleep 3600 "+mark).Run() == nil }
	for end := time.Now().Add(time.Minute); !running(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the command never started")
		}
	}
	if err := self.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = self.Wait()
	for end := time.Now().Add(time.Minute); running(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			out, _ := exec.Command("pgrep", "-af", "sleep 3600 "+mark).Output()
			t.Fatalf("the command outlived kvsweep: %s", strings.TrimSpace(string(out)))
		}
	}
}
