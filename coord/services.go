package coord

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// WaitNATS returns once a NATS server answers at server (nats://HOST:PORT,
// or HOST:PORT; a comma-separated list is tried in order), or fails at the
// deadline with the last error. Answering is the protocol's own handshake:
// the server's INFO line, then PONG for a PING.
func WaitNATS(ctx context.Context, server string, timeout time.Duration) error {
	addrs, err := natsAddrs(server)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		for _, a := range addrs {
			err := pingNATS(ctx, a)
			if err == nil {
				return nil
			}
			// An attempt cut short by the deadline says less of the
			// server than the one before it did ("connection refused").
			if last == nil || ctx.Err() == nil {
				last = err
			}
		}
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); errors.Is(cause, ErrExited) {
				return fmt.Errorf("NATS at %s: %w before it answered (last: %v)", server, cause, last)
			}
			return fmt.Errorf("NATS at %s not healthy after %s: %v", server, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// natsAddrs are the host:port pairs of a NATS server list.
func natsAddrs(server string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(server, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if strings.Contains(s, "://") {
			u, err := url.Parse(s)
			if err != nil || u.Scheme != "nats" || u.Host == "" {
				return nil, fmt.Errorf("NATS server %q: expected nats://HOST:PORT", s)
			}
			s = u.Host
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, fmt.Errorf("NATS server %q: expected nats://HOST:PORT", s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("no NATS server (--server or $NATS_SERVER)")
	}
	return out, nil
}

// pingNATS is one handshake with a bounded read: INFO, then PING/PONG.
func pingNATS(ctx context.Context, addr string) error {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	r := bufio.NewReaderSize(c, 4096)
	line, err := readLine(r)
	if err != nil {
		return fmt.Errorf("%s: reading the server's INFO: %w", addr, err)
	}
	if !strings.HasPrefix(line, "INFO ") {
		return fmt.Errorf("%s: not a NATS server (it said %.40q)", addr, line)
	}
	if _, err := c.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n")); err != nil {
		return err
	}
	for range 4 {
		line, err := readLine(r)
		if err != nil {
			return fmt.Errorf("%s: waiting for PONG: %w", addr, err)
		}
		switch {
		case line == "PONG":
			return nil
		case strings.HasPrefix(line, "-ERR"):
			return fmt.Errorf("%s: %s", addr, line)
		}
	}
	return fmt.Errorf("%s: no PONG", addr)
}

// readLine reads one protocol line of at most the reader's buffer.
func readLine(r *bufio.Reader) (string, error) {
	b, isPrefix, err := r.ReadLine()
	if err != nil {
		return "", err
	}
	if isPrefix {
		return "", errors.New("a line longer than 4 KiB")
	}
	return string(b), nil
}
