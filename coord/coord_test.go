package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kvsweep/kvsweep/internal/testing/etcdtest"
)

// TestMain doubles as a barrier participant when asked to, so tests can
// run (and SIGKILL) participants as real processes.
func TestMain(m *testing.M) {
	if id := os.Getenv("KVSWEEP_BARRIER_ID"); id != "" {
		count, _ := strconv.Atoi(os.Getenv("KVSWEEP_BARRIER_COUNT"))
		c, err := Dial(os.Getenv("ETCD_ENDPOINTS"))
		if err == nil {
			err = Barrier(context.Background(), c, os.Getenv("KVSWEEP_BARRIER_NAME"), id, count, 2*time.Second, time.Minute)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("passed")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var (
	freePort  = etcdtest.FreePort
	startEtcd = etcdtest.Start
)

func TestWaitBeforeAndAfterStart(t *testing.T) {
	port := freePort(t)
	eps := fmt.Sprintf("127.0.0.1:%d", port)
	start := time.Now()
	err := Wait(context.Background(), eps, time.Second)
	if err == nil || !strings.Contains(err.Error(), "not healthy after 1s") {
		t.Fatalf("before the server: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the deadline of 1s took %s", d)
	}
	// The server comes up while etcd-wait waits.
	go func() { time.Sleep(time.Second); startEtcd(t, port) }()
	if err := Wait(context.Background(), eps, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

func participant(t *testing.T, eps, name, id string, count int) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "ETCD_ENDPOINTS="+eps, "KVSWEEP_BARRIER_ID="+id,
		"KVSWEEP_BARRIER_NAME="+name, fmt.Sprintf("KVSWEEP_BARRIER_COUNT=%d", count))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

func TestBarrierOfThree(t *testing.T) {
	port := freePort(t)
	startEtcd(t, port)
	eps := fmt.Sprintf("127.0.0.1:%d", port)
	if err := Wait(context.Background(), eps, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for _, id := range []string{"a", "b", "c"} {
		c, out := participant(t, eps, "three", id, 3)
		cmds, outs = append(cmds, c), append(outs, out)
		time.Sleep(300 * time.Millisecond) // they arrive one after another
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil || !strings.Contains(outs[i].String(), "passed") {
			t.Errorf("participant %d: %v %s", i, err, outs[i])
		}
	}
	// A late arrival passes too: the barrier is marked passed.
	c, out := participant(t, eps, "three", "late", 3)
	if err := c.Wait(); err != nil {
		t.Errorf("late participant: %v %s", err, out)
	}
}

// A participant dies after registering: the others fail within the lease
// TTL (2 s) plus one second, naming it. Four are expected, three come, so
// nobody passes before the death.
func TestBarrierParticipantDies(t *testing.T) {
	port := freePort(t)
	startEtcd(t, port)
	eps := fmt.Sprintf("127.0.0.1:%d", port)
	if err := Wait(context.Background(), eps, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	a, outA := participant(t, eps, "death", "head", 4)
	b, outB := participant(t, eps, "death", "remote", 4)
	victim, _ := participant(t, eps, "death", "victim", 4)
	c, err := Dial(eps)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; ; i++ {
		resp, err := c.Get(context.Background(), "/kvsweep/barrier/death/members/", clientv3.WithPrefix())
		if err == nil && len(resp.Kvs) == 3 {
			break
		}
		if i > 100 {
			t.Fatal("participants did not register")
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = victim.Process.Signal(syscall.SIGKILL)
	_ = victim.Wait()
	killed := time.Now()
	for _, p := range []struct {
		cmd *exec.Cmd
		out *bytes.Buffer
	}{{a, outA}, {b, outB}} {
		err := p.cmd.Wait()
		d := time.Since(killed)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(p.out.String(), "participant victim left before all 4 arrived") {
			t.Errorf("survivor: %v %q", err, p.out)
		}
		if d > 3*time.Second {
			t.Errorf("a survivor failed %s after the death (TTL 2s + 1s)", d)
		}
	}
}

func TestLockContention(t *testing.T) {
	port := freePort(t)
	startEtcd(t, port)
	eps := fmt.Sprintf("127.0.0.1:%d", port)
	if err := Wait(context.Background(), eps, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	c1, _ := Dial(eps)
	c2, _ := Dial(eps)
	defer c1.Close()
	defer c2.Close()
	ctx := context.Background()
	l1, err := TryLock(ctx, c1, "/ci", "phase1-abc", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(ctx, c2, "/ci", "phase1-abc", 5*time.Second)
	var le *LockedError
	host, _ := os.Hostname()
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "sweep phase1-abc is locked by ") || !strings.Contains(le.Holder, "@"+host+" pid ") {
		t.Fatalf("second submitter: %v", err)
	}
	// Another sweep is not locked.
	other, err := TryLock(ctx, c2, "/ci", "phase1-def", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = other.Unlock(ctx)
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := TryLock(ctx, c2, "/ci", "phase1-abc", 5*time.Second)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	_ = l2.Unlock(ctx)
}
