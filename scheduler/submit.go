package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kvsweep/kvsweep/internal/shq"
	"github.com/kvsweep/kvsweep/sweep"
)

// SubmitOptions control Submit.
type SubmitOptions struct {
	// Only restricts submission to these cells (resubmit); nil means every
	// cell that was never submitted.
	Only map[string]bool
	// MaxArraySize splits arrays; 0 asks the scheduler.
	MaxArraySize int
	MaxRunning   int // array throttle %N
	Hold         bool
	Overrides    map[string]string
	// Exclude lists nodes no job of this submission may run on.
	Exclude []string
	// MaxQueued bounds the tasks the user has queued at once (over the
	// manifest's max_queued); 0 leaves it to the scheduler's limits.
	MaxQueued int
	// DryRun prints the sbatch command lines to Out and changes nothing.
	DryRun bool
	Out    io.Writer
	// Submitted, if set, is told what was submitted, before a Queue
	// scheduler runs the tasks.
	Submitted func(*SubmitReport)
}

// admitter is a scheduler that can refuse a job before anything of the
// sweep is submitted (the local executor: more GPUs than its pool has).
type admitter interface {
	Admit(job *sweep.Job, cells []sweep.Cell) error
}

// Queue is a scheduler whose Submit only queues tasks (the local
// executor): Wait runs them to the end, recording them in the journal,
// which the submitting process still holds.
type Queue interface {
	Wait(ctx context.Context, j *sweep.Journal) error
}

// SubmitReport says what Submit did.
type SubmitReport struct {
	Adopted   int // unconfirmed submissions found in Slurm
	Abandoned int // unconfirmed submissions Slurm never received
	Calls     int // sbatch calls
	Cells     int // cells submitted
	JobIDs    []string
	// Final is every cell's state after a Queue scheduler ran the tasks.
	Final []CellStatus
	// Waiting is how many chosen cells were left for later: the queue
	// had no room for them (Room says which limit; nil when none applies),
	// or sbatch refused them for a submit limit (Refused, its message).
	Waiting int
	Room    *Room
	Refused string
}

// Submit submits the cells of the sweep in dir that need it, exactly once,
// holding the sweep's journal (and so its lock) throughout.
//
// It first settles every submission an earlier run left unconfirmed (its
// intent is in the journal, its job id is not): a job with that
// submission's name in the scheduler is adopted, otherwise the intent is
// abandoned. Then each job's cells are submitted as arrays (split at the
// cluster's MaxArraySize with an index offset), each call preceded by a
// synced intent record and followed by a synced submitted record. A Queue
// scheduler then runs the tasks before Submit returns.
func Submit(ctx context.Context, dir string, sched Scheduler, opts SubmitOptions) (*SubmitReport, error) {
	if opts.DryRun {
		return submit(ctx, nil, dir, sched, opts)
	}
	j, err := sweep.OpenJournal(dir)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	rep, err := submit(ctx, j, dir, sched, opts)
	if err != nil {
		return rep, err
	}
	if opts.Submitted != nil {
		opts.Submitted(rep)
	}
	q, ok := sched.(Queue)
	if !ok || rep.Cells == 0 {
		return rep, nil
	}
	if err := q.Wait(ctx, j); err != nil {
		return rep, fmt.Errorf("interrupted: running tasks were terminated and are recorded as CANCELLED")
	}
	rep.Final, _, err = Observe(context.WithoutCancel(ctx), dir, sched)
	return rep, err
}

func submit(ctx context.Context, j *sweep.Journal, dir string, sched Scheduler, opts SubmitOptions) (*SubmitReport, error) {
	rep := &SubmitReport{}
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	crashHook("manifest")
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		if err := reconcile(ctx, j, dir, m, recs, sched, rep); err != nil {
			return rep, err
		}
		if recs, err = sweep.ReadJournal(dir); err != nil {
			return rep, err
		}
	}
	crashHook("reconciled")
	maxArray, err := arrayLimit(ctx, sched, opts)
	if err != nil {
		return rep, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return rep, err
	}
	chosen, err := choose(m, SubmittedCells(m, recs), sched, opts)
	if err != nil {
		return rep, err
	}
	if !opts.DryRun {
		if err := pace(ctx, j, m, chosen, sched, opts, rep, recs); err != nil {
			return rep, err
		}
	}
	todo, err := planCalls(m, chosen, sweep.NextSeq(recs), maxArray, abs, sched, opts)
	if err != nil || len(todo) == 0 {
		return rep, err
	}
	return rep, submitAll(ctx, j, sched, todo, rep)
}

// arrayLimit is the largest array to submit: --max-array-size, else the
// cluster's (a dry run asks no cluster but a DryRunner, which knows its
// own, and says what it assumed).
func arrayLimit(ctx context.Context, sched Scheduler, opts SubmitOptions) (int, error) {
	switch {
	case opts.MaxArraySize > 0:
		return opts.MaxArraySize, nil
	case opts.DryRun && isDryRunner(sched):
		// A DryRunner knows its limit without asking (Kubernetes' is fixed).
		return sched.MaxArraySize(ctx)
	case opts.DryRun:
		// A dry run asks nothing of the cluster: it may not be reachable
		// from here. It says what it assumed instead.
		fmt.Fprintf(opts.Out, "# dry run: nothing was asked of the cluster; arrays split at MaxArraySize %d (Slurm's default; --max-array-size sets it)\n", sweep.DefaultMaxArraySize)
		return sweep.DefaultMaxArraySize, nil
	}
	return sched.MaxArraySize(ctx)
}

// choose returns, by job name, the cells to submit: those never
// submitted, or opts.Only; a scheduler that admits jobs sees each job
// with its chosen cells first.
func choose(m *sweep.Manifest, submitted map[string]bool, sched Scheduler, opts SubmitOptions) (map[string][]sweep.Cell, error) {
	chosen := map[string][]sweep.Cell{}
	for _, c := range m.Cells {
		if (opts.Only == nil && !submitted[c.ID]) || (opts.Only != nil && opts.Only[c.ID]) {
			chosen[c.Job] = append(chosen[c.Job], c)
		}
	}
	if a, ok := sched.(admitter); ok {
		for i := range m.Jobs {
			if cells := chosen[m.Jobs[i].Name]; len(cells) > 0 {
				if err := a.Admit(&m.Jobs[i], cells); err != nil {
					return nil, err
				}
			}
		}
	}
	return chosen, nil
}

// pace leaves in chosen only the cells the queue has room for, when the
// scheduler's queue has limits (a Roomer): the first ones in the
// manifest's order. The others wait, said in the report and, so that
// whoever follows the sweep submits them as room appears, in the journal
// (once). After sbatch refused cells for a limit kvsweep could not read,
// at most the journal's Fit go at once.
func pace(ctx context.Context, j *sweep.Journal, m *sweep.Manifest, chosen map[string][]sweep.Cell, sched Scheduler, opts SubmitOptions, rep *SubmitReport, recs []sweep.Record) error {
	r, ok := sched.(Roomer)
	total := 0
	for _, cells := range chosen {
		total += len(cells)
	}
	if !ok || total == 0 {
		return nil
	}
	q := RoomQuery{MaxQueued: cmp.Or(opts.MaxQueued, m.MaxQueued), QOS: cmp.Or(opts.Overrides["qos"], m.QOS),
		Account: cmp.Or(opts.Overrides["account"], m.Account), Cells: total}
	room, err := r.Room(ctx, q)
	if err != nil {
		return fmt.Errorf("asking how much room the queue has: %w", err)
	}
	rep.Room = room
	free := total
	if room != nil {
		free = room.Free
	}
	why := ""
	if room != nil {
		why = room.String()
	}
	if fit := sweep.Fit(recs); fit > 0 && fit < free {
		free = fit
		rep.Refused = fmt.Sprintf("at most %d cells at once since sbatch refused twice as many for a submit limit", fit)
		why = rep.Refused
	}
	if total <= free {
		return nil
	}
	rep.Waiting = total - free
	for _, job := range m.Jobs {
		cells := chosen[job.Name]
		keep := min(free, len(cells))
		chosen[job.Name], free = cells[:keep], free-keep
	}
	if sweep.Paced(recs) {
		return nil
	}
	return j.Append(sweep.Record{Type: sweep.RecWaiting, Note: fmt.Sprintf("%d cells wait for room in the queue (%s)", rep.Waiting, why)})
}

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

// concurrentSubmitter is a scheduler whose Submit may run in several
// goroutines at once, up to SubmitConcurrency calls.
type concurrentSubmitter interface {
	SubmitConcurrency() int
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
		var se *SlurmError
		if r.tried && noRoom(r.err) && errors.As(r.err, &se) {
			full, fit = se.Msg, max(1, len(todo[i].indices)/2)
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
	if c, ok := sched.(concurrentSubmitter); ok {
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
	var se *SlurmError
	var re *RefusedError
	switch {
	case ctx.Err() != nil:
		// Interrupted: the call may have reached the controller before
		// it was stopped; the intent stays open for the next submit.
	case errors.As(r.err, &se) && !se.Transient:
		// Refused: Slurm has no such job; say so, so the cells stay unsubmitted.
		rec = &sweep.Record{Type: sweep.RecAbandoned, Seq: seq, Note: se.Msg}
	case errors.As(r.err, &re):
		rec = &sweep.Record{Type: sweep.RecAbandoned, Seq: seq, Note: re.Msg}
	}
	// Otherwise (no answer until the deadline) the intent stays open
	// for the next submit to settle.
	return rec, fmt.Errorf("submitting %s (cells %s): %w", p.job, sweep.FormatIndices(p.indices), r.err)
}

// noRoom reports whether err is sbatch refusing a submission for a
// submit limit of the user's association or QOS (MaxSubmitJobs,
// MaxSubmitJobsPerUser, GrpSubmitJobs): no room in the queue yet, not a
// failure of the cells.
func noRoom(err error) bool {
	var se *SlurmError
	if !errors.As(err, &se) || se.Transient {
		return false
	}
	m := strings.ToLower(se.Msg)
	return strings.Contains(m, "maxsubmitjob") || strings.Contains(m, "grpsubmitjob")
}

func isDryRunner(s Scheduler) bool {
	_, ok := s.(DryRunner)
	return ok
}

// RefusedError is a submission a scheduler refused for good: it holds
// no job, so the cells stay unsubmitted.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// reconcile settles unconfirmed submissions from Slurm (by job name) or,
// where Slurm has forgotten finished jobs, from the cells' exit markers.
func reconcile(ctx context.Context, j *sweep.Journal, dir string, m *sweep.Manifest, recs []sweep.Record, sched Scheduler, rep *SubmitReport) error {
	for _, s := range sweep.Submissions(recs) {
		if s.JobID != "" || s.Abandoned {
			continue
		}
		found, err := sched.FindByName(ctx, s.Intent.JobName, s.Intent.Time.Add(-time.Minute))
		if err != nil {
			return fmt.Errorf("settling unconfirmed submission %d (%s): %w", s.Intent.Seq, s.Intent.JobName, err)
		}
		if len(found) == 0 {
			found = markerJobIDs(dir, m, s.Intent)
		}
		if len(found) > 0 {
			if err := j.Append(sweep.Record{Type: sweep.RecSubmitted, Seq: s.Intent.Seq, JobID: found[0], Adopted: true}); err != nil {
				return err
			}
			rep.Adopted++
			continue
		}
		if err := j.Append(sweep.Record{Type: sweep.RecAbandoned, Seq: s.Intent.Seq, Note: "not found in Slurm"}); err != nil {
			return err
		}
		rep.Abandoned++
	}
	return nil
}

// markerJobIDs returns the array job id an exit marker of the intent's
// cells names, if one was written after the intent.
func markerJobIDs(dir string, m *sweep.Manifest, in sweep.Record) []string {
	idx, _ := sweep.ParseIndices(in.Indices)
	want := map[int]bool{}
	for _, i := range idx {
		want[i] = true
	}
	for _, c := range m.Cells {
		if c.Job != in.Job || !want[c.Index] {
			continue
		}
		mk, ok, _ := sweep.ReadExitMarker(dir, c.ID)
		if ok && mk.Started.After(in.Time.Add(-time.Minute)) {
			if mk.ArrayJobID != "" {
				return []string{mk.ArrayJobID}
			}
			return []string{mk.JobID}
		}
	}
	return nil
}

// SubmittedCells is the set of cells with a confirmed or unconfirmed
// (not abandoned) submission.
func SubmittedCells(m *sweep.Manifest, recs []sweep.Record) map[string]bool {
	out := map[string]bool{}
	for _, s := range sweep.Submissions(recs) {
		if s.Abandoned {
			continue
		}
		for _, c := range m.CellsOf(s.Intent) {
			out[c.ID] = true
		}
	}
	return out
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

// crashHook kills the process at a named step when KVSWEEP_TEST_CRASH_AT
// says so ("STEP" or "STEP:N" for the Nth time the step is reached). It
// exists for the crash-recovery tests and does nothing otherwise.
func crashHook(step string) {
	spec := os.Getenv("KVSWEEP_TEST_CRASH_AT")
	if spec == "" {
		return
	}
	name, nth, _ := strings.Cut(spec, ":")
	if name != step {
		return
	}
	n := 1
	if nth != "" {
		n, _ = strconv.Atoi(nth)
	}
	crashMu.Lock()
	crashCounts[step]++
	if crashCounts[step] == n {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	crashMu.Unlock()
}

var (
	crashMu     sync.Mutex
	crashCounts = map[string]int{}
)
