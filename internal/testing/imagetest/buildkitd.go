package imagetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartBuildkitd runs the buildkitd binary with a fresh root (an empty
// cache: a cold build) that may push to registry over plain HTTP, and
// returns its address and a stop function (also run at the test's end).
// It waits as long as the daemon takes to listen, failing only if the
// daemon exits. Stopping asks the daemon to end (SIGTERM, so it stops its
// build containers) and kills it only if it has not within a minute.
func StartBuildkitd(t testing.TB, buildkitd, registry string) (string, func()) {
	t.Helper()
	if buildkitd == "" {
		t.Fatal("KVSWEEP_BUILDKITD is not set (scripts/buildkit-env.sh env)")
	}
	dir, err := os.MkdirTemp("", "kvsweep-bk-")
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	exited := make(chan struct{})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if cmd != nil && cmd.Process != nil {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(time.Minute):
					_ = cmd.Process.Kill()
					<-exited
				}
			}
			_ = os.RemoveAll(dir)
		})
	}
	t.Cleanup(stop)
	cfg := filepath.Join(dir, "buildkitd.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[registry.%q]\n  http = true\n  insecure = true\n", registry)), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "buildkitd.sock")
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close() // the daemon has its own descriptor
	cmd = exec.Command(buildkitd, "--config", cfg, "--root", filepath.Join(dir, "root"), "--addr", "unix://"+sock,
		"--oci-worker=true", "--containerd-worker=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cmd = nil
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(exited) }()
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return "unix://" + sock, stop
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("buildkitd exited before it listened:\n%s", b)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
