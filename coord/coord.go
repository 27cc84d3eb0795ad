// Package coord is the etcd coordination kvsweep uses inside jobs and
// around submission: waiting for etcd, a barrier that fails fast when a
// participant dies, removing stale discovery keys, publishing the head
// node's address, and a lease-backed lock per sweep.
//
// Everything that marks a live participant is attached to an etcd lease
// kept alive by its process: when the process dies, the lease expires
// after its TTL and the others see it go.
package coord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/kvsweep/kvsweep/internal/fail"
)

// Dial connects to etcd. Endpoints are host:port or URLs, comma-separated.
func Dial(endpoints string) (*clientv3.Client, error) {
	eps := Endpoints(endpoints)
	if len(eps) == 0 {
		return nil, errors.New("no etcd endpoints (--endpoints or $ETCD_ENDPOINTS)")
	}
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: quietLogger()})
}

// Endpoints splits a comma-separated endpoint list.
func Endpoints(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Wait returns once etcd answers at endpoints, or fails at the deadline
// with the last error.
func Wait(ctx context.Context, endpoints string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		last = ping(ctx, endpoints)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); errors.Is(cause, ErrExited) {
				return fmt.Errorf("etcd at %s: %w before it answered (last: %v)", endpoints, cause, last)
			}
			return fmt.Errorf("etcd at %s not healthy after %s: %v", endpoints, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ping is one read: a key-value store that answers is healthy.
func ping(ctx context.Context, endpoints string) error {
	c, err := Dial(endpoints)
	if err != nil {
		return err
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = c.Get(pctx, "health")
	return err
}

// quietLogger keeps the etcd client's own logging off the job's output.
func quietLogger() *zap.Logger { return zap.NewNop() }

// Barrier waits until count participants have arrived under name. Each
// participant registers id under a lease of ttl that its process keeps
// alive. It returns when count are present (the first to see them marks
// the barrier passed, so late arrivals pass too); it fails at once when a
// registered participant leaves first (its process died and its lease
// expired), naming it, and at timeout naming who is there.
func Barrier(ctx context.Context, c *clientv3.Client, name, id string, count int, ttl, timeout time.Duration) error {
	prefix := "/kvsweep/barrier/" + name + "/"
	members, passed := prefix+"members/", prefix+"passed"
	sess, err := concurrency.NewSession(c, concurrency.WithTTL(max(1, int(ttl/time.Second))))
	if err != nil {
		return fmt.Errorf("barrier %s: %w", name, err)
	}
	// The registration lives as long as this process: a participant that
	// passed stays registered until it exits.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := c.Put(ctx, members+id, hostname(), clientv3.WithLease(sess.Lease())); err != nil {
		return fmt.Errorf("barrier %s: registering %s: %w", name, id, err)
	}
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("barrier %s: %w", name, err)
	}
	present := map[string]bool{}
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		if k == passed {
			return nil
		}
		present[strings.TrimPrefix(k, members)] = true
	}
	if len(present) >= count {
		_, err := c.Put(ctx, passed, id)
		return err
	}
	w := c.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("barrier %s: timed out after %s with %d of %d participants (present: %s)", name, timeout, len(present), count, list(present))
		case wr, ok := <-w:
			if !ok {
				return fmt.Errorf("barrier %s: the watch ended: %v", name, ctx.Err())
			}
			if err := wr.Err(); err != nil {
				return fmt.Errorf("barrier %s: %w", name, err)
			}
			for _, ev := range wr.Events {
				k := string(ev.Kv.Key)
				if k == passed {
					return nil
				}
				who := strings.TrimPrefix(k, members)
				if ev.Type == clientv3.EventTypeDelete {
					delete(present, who)
					return fmt.Errorf("barrier %s: participant %s left before all %d arrived (its lease expired: the process died or lost etcd); present: %s", name, who, count, list(present))
				}
				present[who] = true
			}
			if len(present) >= count {
				_, err := c.Put(ctx, passed, id)
				return err
			}
		case <-sess.Done():
			return fmt.Errorf("barrier %s: this participant's lease was lost", name)
		}
	}
}

func list(m map[string]bool) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func hostname() string {
	h, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d", h, os.Getpid())
}

// Clean deletes every key under prefix (stale discovery registrations of
// workers killed by Guard tests) and returns how many went.
func Clean(ctx context.Context, c *clientv3.Client, prefix string) (int64, error) {
	if prefix == "" || prefix == "/" {
		return 0, errors.New("refusing to delete every key: give a prefix")
	}
	resp, err := c.Delete(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	return resp.Deleted, nil
}

// Publish puts key=value (the head node's address, for the other nodes).
func Publish(ctx context.Context, c *clientv3.Client, key, value string) error {
	_, err := c.Put(ctx, key, value)
	return err
}

// Get waits up to timeout for key to exist and returns its value.
func Get(ctx context.Context, c *clientv3.Client, key string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) > 0 {
		return string(resp.Kvs[0].Value), nil
	}
	for wr := range c.Watch(ctx, key, clientv3.WithRev(resp.Header.Revision+1)) {
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypePut {
				return string(ev.Kv.Value), nil
			}
		}
	}
	return "", fmt.Errorf("%s: not published within %s", key, timeout)
}

// Lock is a held sweep lock.
type Lock struct {
	sess *concurrency.Session
	mu   *concurrency.Mutex
}

// LockedError says who holds a lock.
type LockedError struct{ Sweep, Holder string }

func (e *LockedError) Error() string {
	return fmt.Sprintf("sweep %s is locked by %s; wait for it to finish, or stop it", e.Sweep, e.Holder)
}

// TryLock takes the lock of a sweep under prefix without waiting, held by
// a lease of ttl that this process keeps alive; if another holds it, the
// error names the holder (user, host, pid, since when).
func TryLock(ctx context.Context, c *clientv3.Client, prefix, sweepID string, ttl time.Duration) (*Lock, error) {
	sess, err := concurrency.NewSession(c, concurrency.WithTTL(max(1, int(ttl/time.Second))))
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(prefix, "/") + "/lock/" + sweepID
	mu := concurrency.NewMutex(sess, base)
	if err := mu.TryLock(ctx); err != nil {
		sess.Close()
		if errors.Is(err, concurrency.ErrLocked) {
			holder := "another session"
			if resp, gerr := c.Get(ctx, base+"/holder"); gerr == nil && len(resp.Kvs) > 0 {
				holder = string(resp.Kvs[0].Value)
			}
			return nil, &LockedError{Sweep: sweepID, Holder: holder}
		}
		return nil, err
	}
	user := os.Getenv("USER")
	if user == "" {
		user = fmt.Sprint(os.Getuid())
	}
	who := fmt.Sprintf("%s@%s since %s", user, hostname(), time.Now().UTC().Format(time.RFC3339))
	if _, err := c.Put(ctx, base+"/holder", who, clientv3.WithLease(sess.Lease())); err != nil {
		_ = mu.Unlock(ctx)
		sess.Close()
		return nil, err
	}
	return &Lock{sess: sess, mu: mu}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock(ctx context.Context) error {
	err := l.mu.Unlock(ctx)
	l.sess.Close()
	return err
}

// LockURL takes the sweep lock named by url, etcd://HOST:PORT/PREFIX,
// without waiting, and returns the function that releases it. A url of
// another form is a usage error.
func LockURL(ctx context.Context, url, sweepID string) (release func(), err error) {
	rest, ok := strings.CutPrefix(url, "etcd://")
	hostport, prefix, _ := strings.Cut(rest, "/")
	if !ok || hostport == "" || strings.HasPrefix(hostport, "-") {
		return nil, fail.Usagef("--lock %q: expected etcd://HOST:PORT/PREFIX", url)
	}
	c, err := Dial(hostport)
	if err != nil {
		return nil, err
	}
	l, err := TryLock(ctx, c, "/"+prefix, sweepID, 10*time.Second)
	if err != nil {
		c.Close()
		return nil, err
	}
	return func() {
		_ = l.Unlock(context.Background())
		c.Close()
	}, nil
}
