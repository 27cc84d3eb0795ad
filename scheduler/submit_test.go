package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/rendertest"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// parallelSched is a scheduler whose Submit waits, when want is set,
// until want calls are in flight at once, and can refuse one job.
type parallelSched struct {
	mu                sync.Mutex
	inFlight, most    int
	calls             int
	refuse            string // a job name Submit refuses
	concurrency       int
	allIn             chan struct{}
	want              int
	started           chan struct{} // told of each call, if set
	scheduler.Records               // Poll, Cancel: nothing
}

func (p *parallelSched) Name() string                              { return "slurm" }
func (p *parallelSched) MaxArraySize(context.Context) (int, error) { return 2, nil }
func (p *parallelSched) SubmitConcurrency() int                    { return p.concurrency }
func (p *parallelSched) FindByName(context.Context, string, time.Time) ([]string, error) {
	return nil, nil
}

func (p *parallelSched) Submit(ctx context.Context, r scheduler.SubmitRequest) (string, error) {
	p.mu.Lock()
	p.calls++
	p.inFlight++
	p.most = max(p.most, p.inFlight)
	if p.inFlight == p.want {
		close(p.allIn)
	}
	p.mu.Unlock()
	if p.started != nil {
		p.started <- struct{}{}
	}
	defer func() { p.mu.Lock(); p.inFlight--; p.mu.Unlock() }()
	if p.refuse != "" && strings.Contains(r.JobName, p.refuse) {
		return "", &scheduler.RefusedError{Msg: "Invalid partition name specified"}
	}
	if p.want > 0 {
		select {
		case <-p.allIn:
		case <-ctx.Done():
			// What an sbatch killed by the context says.
			return "", &scheduler.RefusedError{Msg: "signal: killed"}
		}
	}
	return fmt.Sprint(100 + r.Seq), nil
}

// Four arrays (8 cells at MaxArraySize 2) are submitted four at once:
// every call is in flight before any returns, and each is recorded.
func TestSubmitArraysAtOnce(t *testing.T) {
	dir := eightCells(t)
	s := &parallelSched{concurrency: 4, want: 4, allIn: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scheduler.Submit(ctx, dir, s, scheduler.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.most != 4 || rep.Calls != 4 || rep.Cells != 8 {
		t.Fatalf("%d calls at most in flight, report %+v", s.most, rep)
	}
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range sweep.Submissions(recs) {
		if sub.JobID != fmt.Sprint(100+sub.Intent.Seq) {
			t.Errorf("submission %d recorded job %q", sub.Intent.Seq, sub.JobID)
		}
	}
}

// After a refusal no further call starts: the arrays not tried and the
// refused one are recorded abandoned (their cells stay unsubmitted), the
// ones submitted are recorded, and the error names the refused one.
func TestSubmitStopsAfterRefusal(t *testing.T) {
	dir := eightCells(t)
	s := &parallelSched{concurrency: 1, refuse: ".s2"}
	_, err := scheduler.Submit(context.Background(), dir, s, scheduler.SubmitOptions{})
	if err == nil || !strings.Contains(err.Error(), "Invalid partition") {
		t.Fatalf("submit: %v", err)
	}
	if s.calls != 2 {
		t.Errorf("%d sbatch calls, want 2 (one submitted, one refused, none after)", s.calls)
	}
	got, recs := outcomes(t, dir)
	if fmt.Sprint(got) != "[submitted abandoned abandoned abandoned]" {
		t.Errorf("journal: %v", got)
	}
	m, _ := sweep.ReadManifest(dir)
	if n := len(scheduler.SubmittedCells(m, recs)); n != 2 {
		t.Errorf("%d cells submitted, want 2", n)
	}
}

// Interrupted with two calls in flight: their intents stay open for the
// next submit to settle (the controller may have their jobs), the arrays
// not tried are abandoned.
func TestSubmitInterrupted(t *testing.T) {
	dir := eightCells(t)
	s := &parallelSched{concurrency: 2, want: 99, allIn: make(chan struct{}), started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.started
		<-s.started
		cancel()
	}()
	if _, err := scheduler.Submit(ctx, dir, s, scheduler.SubmitOptions{}); err == nil {
		t.Fatal("an interrupted submit succeeded")
	}
	got, _ := outcomes(t, dir)
	if fmt.Sprint(got) != "[open open abandoned abandoned]" {
		t.Errorf("journal: %v", got)
	}
}

// outcomes says how each submission in the journal stands: submitted,
// abandoned or open.
func outcomes(t *testing.T, dir string) ([]string, []sweep.Record) {
	t.Helper()
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sub := range sweep.Submissions(recs) {
		switch {
		case sub.JobID != "":
			got = append(got, "submitted")
		case sub.Abandoned:
			got = append(got, "abandoned")
		default:
			got = append(got, "open")
		}
	}
	return got, recs
}

// eightCells renders a sweep of eight cells of one job.
func eightCells(t *testing.T) string {
	t.Helper()
	src := `version: 1
name: eight
harness: {command: ["true"]}
topologies: {t: {kind: aggregated, resources: {time: 1m}}}
geometries: {g: {}}
matrix: {engine: [vllm], topology: [t], geometry: [g], case: [TC-01], repeat: ["1", "2", "3", "4", "5", "6", "7", "8"]}
`
	dir, _ := rendertest.Render(t, "eight.yaml", []byte(src), render.Options{SweepID: "eight-test"})
	return dir
}
