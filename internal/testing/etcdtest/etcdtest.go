// Package etcdtest starts a real etcd server (Debian's etcd-server) on a
// free loopback port for tests.
package etcdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FreePort is a loopback TCP port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start runs etcd serving clients on 127.0.0.1:port until the test ends.
// A missing etcd fails the test: the test command installs etcd-server.
func Start(t testing.TB, port int) {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd is not installed (scripts/test.sh installs etcd-server): %v", err)
	}
	dir := t.TempDir()
	client := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--listen-client-urls", client,
		"--advertise-client-urls", client, "--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)))
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() })
}
