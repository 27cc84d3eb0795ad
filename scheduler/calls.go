package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvsweep/kvsweep/internal/shq"
	"github.com/kvsweep/kvsweep/sweep"
)

// planCalls makes one submission per array chunk of each job's chosen
// cells, numbered from seq, each with its intent record; a dry run prints
// them instead and returns none.
func planCalls(m *sweep.Manifest, chosen map[string][]sweep.Cell, seq, maxArray int, abs string, sched Scheduler, opts SubmitOptions) ([]pending, error) {
	var todo []pending
	for _, job := range m.Jobs {
		var idx []int
		for _, c := range chosen[job.Name] {
			idx = append(idx, c.Index)
		}
		sort.Ints(idx)
		for _, ch := range chunks(idx, maxArray, job.Array) {
			req := SubmitRequest{
				Seq:       seq,
				Dir:       abs,
				Script:    job.Script,
				Object:    job.Object,
				JobName:   sweep.SubmissionName(m.SweepID, job.Name, seq),
				Comment:   sweep.SubmissionTag(m.SweepID, job.Name, seq),
				Throttle:  opts.MaxRunning,
				Exclude:   opts.Exclude,
				Offset:    ch.offset,
				Hold:      opts.Hold,
				Overrides: opts.Overrides,
				TimeLimit: time.Duration(job.Res.TimeSeconds) * time.Second,
				GPUs:      job.Res.GPUsPerNode,
			}
			if job.Array {
				req.Array = sweep.FormatIndices(ch.tasks)
			}
			if opts.DryRun {
				if err := dryRun(sched, req, abs, opts.Out); err != nil {
					return nil, err
				}
				seq++
				continue
			}
			todo = append(todo, pending{req: req, job: job.Name, indices: ch.indices,
				intent: sweep.Record{Type: sweep.RecIntent, Seq: seq, Scheduler: sched.Name(), Job: job.Name,
					Indices: sweep.FormatIndices(ch.indices), Offset: ch.offset, JobName: req.JobName}})
			seq++
		}
	}
	return todo, nil
}

// dryRun prints what a submission would be: the scheduler's own view of
// it, or the sbatch command line.
func dryRun(sched Scheduler, req SubmitRequest, abs string, out io.Writer) error {
	if dr, ok := sched.(DryRunner); ok {
		text, err := dr.DryRun(req)
		if err != nil {
			return err
		}
		fmt.Fprint(out, text)
		return nil
	}
	fmt.Fprintf(out, "(cd %s && sbatch %s)\n", shq.Quote(abs), shq.Join(SubmitArgs(req)))
	return nil
}

// pending is one array (or job) to submit, with its intent record.
type pending struct {
	req     SubmitRequest
	job     string
	indices []int
	intent  sweep.Record
}

// submitAll submits the arrays exactly once: their intents in one synced
// write, then the scheduler's calls, several at a time where it allows
// (each submission is named by its intent, so any subset of them may be
// in flight), then what each call did in one synced write. A crash at any
// point leaves intents without an outcome, which the next submit settles
// by name (reconcile). After a refusal no further call starts; the arrays
// not tried are recorded abandoned, and every call already started is
// waited for and recorded. A refusal for a submit limit is no room yet:
// its cells wait, and later rounds submit at most half as many at once.
func submitAll(ctx context.Context, j *sweep.Journal, sched Scheduler, todo []pending, rep *SubmitReport) error {
	intents := make([]sweep.Record, len(todo))
	for i, p := range todo {
		intents[i] = p.intent
	}
	if err := j.Append(intents...); err != nil {
		return err
	}
	for range todo {
		crashHook("intent")
	}
	res := callAll(ctx, sched, todo)
	// A refusal for a submit limit is no room yet: its cells, and those
	// of the calls not made after it, wait for the next round.
	full, fit := "", 0
	for i, r := range res {
		var re *RefusedError
		if r.tried && noRoom(r.err) && errors.As(r.err, &re) {
			full, fit = re.Msg, max(1, len(todo[i].indices)/2)
		}
	}
	var recs []sweep.Record
	var first error
	waiting := 0
	for i, p := range todo {
		if full != "" && (!res[i].tried || noRoom(res[i].err)) && ctx.Err() == nil {
			recs = append(recs, sweep.Record{Type: sweep.RecAbandoned, Seq: p.intent.Seq, Note: "no room in the queue: " + full})
			waiting += len(p.indices)
			continue
		}
		rec, err := outcome(ctx, p, res[i])
		if rec != nil {
			recs = append(recs, *rec)
		}
		if err == nil && rec != nil && rec.Type == sweep.RecSubmitted {
			rep.Calls++
			rep.Cells += len(p.indices)
			rep.JobIDs = append(rep.JobIDs, rec.JobID)
		}
		if first == nil {
			first = err
		}
	}
	rep.Waiting += waiting
	if waiting > 0 {
		rep.Refused, _, _ = strings.Cut(full, "\n")
		recs = append(recs, sweep.Record{Type: sweep.RecWaiting, Fit: fit,
			Note: fmt.Sprintf("%d cells wait for room in the queue (sbatch: %s)", waiting, full)})
	}
	if len(recs) > 0 {
		if err := j.Append(recs...); err != nil {
			return err
		}
	}
	for _, r := range recs {
		if r.Type == sweep.RecSubmitted {
			crashHook("submitted")
		}
	}
	return first
}

// callResult is what one submission call answered; tried is false for a
// call not made (an earlier one failed, or the run was interrupted).
type callResult struct {
	id    string
	err   error
	tried bool
}

// callAll makes the submission calls, as many at once as the scheduler
// takes (one for Slurm), and stops making them after the first failure.
func callAll(ctx context.Context, sched Scheduler, todo []pending) []callResult {
	limit := 1
	if c, ok := sched.(ConcurrentSubmitter); ok {
		limit = max(1, c.SubmitConcurrency())
	}
	res := make([]callResult, len(todo))
	var failed atomic.Bool
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range todo {
		slots <- struct{}{}
		if failed.Load() || ctx.Err() != nil {
			<-slots
			break
		}
		res[i].tried = true
		wg.Go(func() {
			defer func() { <-slots }()
			res[i].id, res[i].err = sched.Submit(ctx, todo[i].req)
			if res[i].err != nil {
				failed.Store(true)
				return
			}
			crashHook("sbatch")
		})
	}
	wg.Wait()
	return res
}

// outcome is the journal record of one call's answer (nil leaves the
// intent open for the next submit to settle: a call interrupted or with
// no answer may have reached the controller) and, for a failed call, the
// error that says which cells it was for.
func outcome(ctx context.Context, p pending, r callResult) (*sweep.Record, error) {
	seq := p.intent.Seq
	if !r.tried {
		note := "not submitted: an earlier submission of this run failed"
		if ctx.Err() != nil {
			note = "not submitted: interrupted"
		}
		return &sweep.Record{Type: sweep.RecAbandoned, Seq: seq, Note: note}, nil
	}
	if r.err == nil {
		return &sweep.Record{Type: sweep.RecSubmitted, Seq: seq, JobID: r.id}, nil
	}
	var rec *sweep.Record
	var re *RefusedError
	switch {
	case ctx.Err() != nil:
		// Interrupted: the call may have reached the controller before
		// it was stopped; the intent stays open for the next submit.
	case errors.As(r.err, &re) && !re.Transient:
		// Refused: the cluster has no such job; say so, so the cells
		// stay unsubmitted.
		rec = &sweep.Record{Type: sweep.RecAbandoned, Seq: seq, Note: re.Msg}
	}
	// Otherwise (no answer until the deadline) the intent stays open
	// for the next submit to settle.
	return rec, fmt.Errorf("submitting %s (cells %s): %w", p.job, sweep.FormatIndices(p.indices), r.err)
}

// SubmitArgs is the sbatch command line of a request, without "sbatch":
// what scheduler slurm runs, and what a dry run shows of a scheduler
// without a view of its own (DryRunner).
func SubmitArgs(r SubmitRequest) []string {
	args := []string{"--parsable", "--job-name=" + r.JobName, "--comment=" + r.Comment}
	if r.Array != "" {
		a := "--array=" + r.Array
		if r.Throttle > 0 {
			a += "%" + strconv.Itoa(r.Throttle)
		}
		args = append(args, a)
	}
	if r.Offset != 0 {
		args = append(args, "--export=ALL,KVSWEEP_INDEX_OFFSET="+strconv.Itoa(r.Offset))
	}
	for _, k := range []string{"partition", "account", "qos", "reservation"} {
		if v := r.Overrides[k]; v != "" {
			args = append(args, "--"+k+"="+v)
		}
	}
	if r.Hold {
		args = append(args, "--hold")
	}
	if len(r.Exclude) > 0 {
		args = append(args, "--exclude="+strings.Join(r.Exclude, ","))
	}
	return append(args, r.Script)
}

type chunk struct {
	indices []int // cell-table indices
	tasks   []int // array task ids: indices - offset
	offset  int
}

// chunks splits sorted cell-table indices into arrays whose task ids stay
// below maxArray: indices below maxArray keep task id = index; the rest go
// into arrays offset by their first index. A plain job is one chunk.
func chunks(idx []int, maxArray int, array bool) []chunk {
	if len(idx) == 0 {
		return nil
	}
	if !array {
		return []chunk{{indices: idx, tasks: idx}}
	}
	var out []chunk
	cur := chunk{}
	for _, i := range idx {
		if len(cur.indices) > 0 && i-cur.offset >= maxArray {
			out = append(out, cur)
			cur = chunk{}
		}
		if len(cur.indices) == 0 && i >= maxArray {
			cur.offset = i
		}
		cur.indices = append(cur.indices, i)
		cur.tasks = append(cur.tasks, i-cur.offset)
	}
	return append(out, cur)
}
