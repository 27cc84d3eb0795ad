package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// roomSched is parallelSched with a queue: Room answers free, and
// Submit refuses for a submit limit once limitAfter calls were made.
type roomSched struct {
	parallelSched
	free       int
	limitAfter int
	asked      []scheduler.RoomQuery
}

func (r *roomSched) Room(_ context.Context, q scheduler.RoomQuery) (*scheduler.Room, error) {
	r.asked = append(r.asked, q)
	return &scheduler.Room{Free: r.free, Limit: 4, Used: 4 - r.free, What: "QOS normal MaxSubmitJobsPerUser"}, nil
}

func (r *roomSched) Submit(ctx context.Context, req scheduler.SubmitRequest) (string, error) {
	if r.limitAfter > 0 && r.calls >= r.limitAfter {
		r.calls++
		return "", &scheduler.RefusedError{Msg: "QOSMaxSubmitJobPerUserLimit\nBatch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)", NoRoom: true}
	}
	return r.parallelSched.Submit(ctx, req)
}

// A queue with room for three cells: three are submitted (the first in
// the manifest's order), five wait, the journal says the sweep waits
// (once, however often it is submitted again with no room), and the
// next submits take what room there is until none waits.
func TestSubmitPacedByRoom(t *testing.T) {
	dir := eightCells(t)
	s := &roomSched{parallelSched: parallelSched{concurrency: 1}, free: 3}
	rep, err := scheduler.Submit(context.Background(), dir, s, scheduler.SubmitOptions{MaxQueued: 7, Overrides: map[string]string{"qos": "gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cells != 3 || rep.Waiting != 5 || rep.Room == nil || !strings.Contains(rep.Room.String(), "MaxSubmitJobsPerUser 4, 1 in use") {
		t.Fatalf("report %+v (room %v), want 3 submitted and 5 waiting", rep, rep.Room)
	}
	if q := s.asked[0]; q.MaxQueued != 7 || q.QOS != "gpu" {
		t.Errorf("asked for room with %+v, want max_queued 7 and the --qos", q)
	}
	m, _ := sweep.ReadManifest(dir)
	_, recs := outcomes(t, dir)
	sub := scheduler.SubmittedCells(m, recs)
	for _, c := range m.Cells {
		if sub[c.ID] != (c.Index < 3) {
			t.Errorf("cell %d submitted: %v, want the first three only", c.Index, sub[c.ID])
		}
	}
	s.free = 0
	if rep, err = scheduler.Submit(context.Background(), dir, s, scheduler.SubmitOptions{}); err != nil || rep.Cells != 0 || rep.Waiting != 5 {
		t.Fatalf("a submit with no room: %+v, %v", rep, err)
	}
	s.free = 10
	if rep, err = scheduler.Submit(context.Background(), dir, s, scheduler.SubmitOptions{}); err != nil || rep.Cells != 5 || rep.Waiting != 0 {
		t.Fatalf("a submit with room for all: %+v, %v", rep, err)
	}
	if n := waitingRecords(t, dir); n != 1 {
		t.Errorf("%d waiting records, want 1", n)
	}
}

// sbatch refusing a submission for a submit limit is no room yet: no
// error, the refused array's cells and those not tried after it wait,
// their intents closed, and the journal says the sweep waits.
func TestSubmitLimitRefusalWaits(t *testing.T) {
	dir := eightCells(t)
	s := &roomSched{parallelSched: parallelSched{concurrency: 1}, free: 100, limitAfter: 1}
	rep, err := scheduler.Submit(context.Background(), dir, s, scheduler.SubmitOptions{})
	if err != nil {
		t.Fatalf("a refusal for a submit limit failed the submit: %v", err)
	}
	if rep.Cells != 2 || rep.Waiting != 6 {
		t.Errorf("report %+v, want 2 submitted and 6 waiting", rep)
	}
	got, recs := outcomes(t, dir)
	if fmt.Sprint(got) != "[submitted abandoned abandoned abandoned]" {
		t.Errorf("journal: %v", got)
	}
	if !sweep.Paced(recs) || waitingRecords(t, dir) != 1 {
		t.Errorf("the journal does not say the sweep waits")
	}
	for _, r := range recs {
		if r.Type == sweep.RecAbandoned && !strings.HasPrefix(r.Note, "no room in the queue: QOSMaxSubmitJobPerUserLimit") {
			t.Errorf("abandoned with %q, want the limit named", r.Note)
		}
	}
	// The limit was not one Room knew: later rounds send at most half
	// of the refused array (2 cells) at once.
	s.limitAfter = 0
	if rep, err = scheduler.Submit(context.Background(), dir, s, scheduler.SubmitOptions{}); err != nil || rep.Cells != 1 || rep.Waiting != 5 {
		t.Errorf("the round after the refusal: %+v, %v; want 1 submitted and 5 waiting", rep, err)
	}
}

func waitingRecords(t *testing.T, dir string) int {
	t.Helper()
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Type == sweep.RecWaiting {
			n++
		}
	}
	return n
}
