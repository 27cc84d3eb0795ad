package coord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The ports a job's services are given come from below the kernel's
// ephemeral range, where no outgoing connection of the node (a harness
// opens thousands) can take one between the pick and the service's bind;
// above portFloor, where test clusters and most sites' fixed services sit.
const (
	portFloor    = 20000
	minPortSpace = 1000
	rangeFile    = "/proc/sys/net/ipv4/ip_local_port_range"
)

// FreePorts returns n TCP ports free on this host now, each different:
// what a job gives the services it starts, so two cells on one node never
// meet. They are drawn at random from [20000, the ephemeral range's
// start) and each checked by a listener; where that space is too small
// (an unusual ip_local_port_range), the kernel picks. A port can still be
// taken by another picker before the service binds it: the job script
// starts the service again on fresh ports when it fails to bind.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	hi := ephemeralStart()
	var out []int
	for range n {
		l, err := listenBelow(hi)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// listenBelow listens on a random free port in [portFloor, hi), or on the
// kernel's choice when that space is too small or every try was taken.
func listenBelow(hi int) (net.Listener, error) {
	if hi-portFloor >= minPortSpace {
		for range 64 {
			p := portFloor + rand.IntN(hi-portFloor)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				return l, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// ephemeralStart is the first port of the kernel's ephemeral range (0
// when it cannot be read: the kernel picks then).
func ephemeralStart() int {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= 0 || lo > 65535 {
		return 0
	}
	return lo
}

// ErrExited is returned by a wait whose service process ended first.
var ErrExited = errors.New("the service's process exited")

// WhileAlive returns a context cancelled, with cause ErrExited, once the
// process pid is gone (pid 0: never): a wait for a service started in the
// background gives up at once when the service exits (a port taken, a bad
// flag) instead of at its deadline.
func WhileAlive(ctx context.Context, pid int) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if pid <= 0 {
		return ctx, func() { cancel(nil) }
	}
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
					cancel(fmt.Errorf("%w (pid %d)", ErrExited, pid))
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}
