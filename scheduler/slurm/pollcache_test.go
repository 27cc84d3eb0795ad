package slurm

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// Followers of different sweeps share one poll: a follower whose jobs the
// answer covers and that is young enough takes it; one with jobs it does
// not cover polls every followed job at once; many at once poll once.
func TestPollCacheShares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "polls", "slurm-x.json")
	var calls atomic.Int32
	var asked [][]scheduler.PollJob
	var mu sync.Mutex
	direct := func(_ context.Context, jobs []scheduler.PollJob) (*scheduler.Poll, error) {
		calls.Add(1)
		mu.Lock()
		asked = append(asked, jobs)
		mu.Unlock()
		p := &scheduler.Poll{Tasks: map[string]sweep.TaskState{}, Accounting: true}
		for _, j := range jobs {
			p.Tasks[j.ID+"_0"] = sweep.TaskState{State: scheduler.StateRunning}
		}
		return p, nil
	}
	a := []scheduler.PollJob{{ID: "10", Name: "kvs.a.j.s1"}}
	b := []scheduler.PollJob{{ID: "20", Name: "kvs.b.j.s1"}, {ID: "21", Name: "kvs.b.j.s2"}}
	fresh := &PollCache{Path: path, MaxAge: time.Hour}
	ctx := context.Background()

	p, err := fresh.Poll(ctx, a, direct)
	if err != nil || len(p.Tasks) != 1 || p.Tasks["10_0"].State != scheduler.StateRunning {
		t.Fatalf("first poll: %+v, %v", p, err)
	}
	// b is not covered: one poll of a's and b's jobs; b sees only its own.
	if p, err = fresh.Poll(ctx, b, direct); err != nil || len(p.Tasks) != 2 || calls.Load() != 2 || len(asked[1]) != 3 {
		t.Fatalf("second follower: %+v, %v, %d calls, asked %v", p, err, calls.Load(), asked)
	}
	// Both covered and fresh: twenty polls at once ask Slurm nothing.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			jobs := a
			if i%2 == 1 {
				jobs = b
			}
			if p, err := fresh.Poll(ctx, jobs, direct); err != nil || len(p.Tasks) != len(jobs) {
				t.Errorf("follower %d: %+v, %v", i, p, err)
			}
		})
	}
	wg.Wait()
	if calls.Load() != 2 {
		t.Errorf("%d calls after twenty covered polls, want still 2", calls.Load())
	}
	// Older than a follower's interval: it polls again, for both.
	strict := &PollCache{Path: path, MaxAge: time.Nanosecond}
	time.Sleep(time.Millisecond)
	if _, err := strict.Poll(ctx, a, direct); err != nil || calls.Load() != 3 || len(asked[2]) != 3 {
		t.Errorf("an answer older than the interval was used: %d calls, asked %v", calls.Load(), asked)
	}
}

// A job polled under another name (its id reused) is not covered.
func TestPollCacheNamesMatter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	calls := 0
	direct := func(_ context.Context, jobs []scheduler.PollJob) (*scheduler.Poll, error) {
		calls++
		return &scheduler.Poll{Tasks: map[string]sweep.TaskState{}}, nil
	}
	c := &PollCache{Path: path, MaxAge: time.Hour}
	for _, name := range []string{"kvs.a.j.s1", "kvs.other.j.s1"} {
		if _, err := c.Poll(context.Background(), []scheduler.PollJob{{ID: "7", Name: name}}, direct); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 2 {
		t.Errorf("%d polls, want 2: an answer for job 7 named kvs.a was taken for kvs.other", calls)
	}
}
