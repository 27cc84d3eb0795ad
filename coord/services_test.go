package coord

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// natsServer starts Debian's nats-server (the test command installs it)
// on a free port of its own, stopped with the test.
func natsServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nats-server"); err != nil {
			t.Fatal("nats-server is not installed: the README's test command installs it (scripts/buildkit-env.sh)")
		}
	}
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1", "--port", strconv.Itoa(ports[0]))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return "nats://127.0.0.1:" + strconv.Itoa(ports[0])
}

// A real NATS server is healthy once it completes the handshake; one that
// starts late is waited for.
func TestWaitNATS(t *testing.T) {
	url := natsServer(t)
	if err := WaitNATS(context.Background(), url, time.Minute); err != nil {
		t.Fatal(err)
	}
	// A list: the first that answers will do.
	if err := WaitNATS(context.Background(), "nats://127.0.0.1:1,"+url, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// What is not a NATS server, or not there, fails at the deadline saying
// what it met; a malformed address fails at once.
func TestWaitNATSRefuses(t *testing.T) {
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	// An HTTP server says nothing first: the INFO read times out.
	err := WaitNATS(context.Background(), "nats://"+web.Listener.Addr().String(), 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not healthy after 3s") || !strings.Contains(err.Error(), "reading the server's INFO") {
		t.Errorf("an HTTP server: %v", err)
	}
	// A server that greets with something else.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
			c.Close()
		}
	}()
	if err := WaitNATS(context.Background(), "nats://"+l.Addr().String(), 2*time.Second); err == nil || !strings.Contains(err.Error(), "not a NATS server") {
		t.Errorf("an SSH server: %v", err)
	}
	ports, _ := FreePorts(1)
	// However slow this machine is, the first attempt ends refused well
	// within the window, and the deadline's own cut does not replace it.
	if err := WaitNATS(context.Background(), "nats://127.0.0.1:"+strconv.Itoa(ports[0]), 5*time.Second); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("nothing listening: %v", err)
	}
	for _, bad := range []string{"", "http://127.0.0.1:4222", "nats://", "127.0.0.1"} {
		if err := WaitNATS(context.Background(), bad, time.Second); err == nil || !strings.Contains(err.Error(), "NATS server") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// FreePorts gives distinct ports a listener can take.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p <= 0 {
			t.Fatalf("ports %v: not distinct", ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}
