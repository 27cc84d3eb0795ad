package coord

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// The ports come from below the ephemeral range, each different, each
// free to bind.
func TestFreePortsBelowEphemeral(t *testing.T) {
	hi := ephemeralStart()
	if hi-portFloor < minPortSpace {
		t.Skipf("ip_local_port_range starts at %d: the kernel picks here", hi)
	}
	ports, err := FreePorts(16)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < portFloor || p >= hi || seen[p] {
			t.Errorf("port %d: want distinct ports in [%d, %d): %v", p, portFloor, hi, ports)
		}
		seen[p] = true
	}
}

// A wait tied to a process gives up once it exits, saying so.
func TestWhileAliveEndsWithTheProcess(t *testing.T) {
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	ctx, cancel := WhileAlive(context.Background(), cmd.Process.Pid)
	defer cancel()
	err := Wait(ctx, "http://127.0.0.1:1", 10*time.Minute)
	if !errors.Is(err, ErrExited) {
		t.Fatalf("Wait: %v, want the process's exit", err)
	}
}
