package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// Slurm drives a cluster through its command-line tools (sbatch, squeue,
// sacct, scontrol, scancel), which is what most users have. Calls that fail
// for a transient reason (controller down, timeouts) are retried with
// capped exponential backoff until Deadline; others fail at once.
type Slurm struct {
	// Env is added to the environment of every command (SLURM_CONF=...).
	Env []string
	// Deadline bounds the retries of one operation (default 10 minutes).
	Deadline time.Duration
	// Log receives one line per retry (default: discarded).
	Log io.Writer
	// Calls counts the commands run, for benchmarks and tests.
	Calls atomic.Int64
	// foreignSeen is what Poll has logged of other jobs' answers, so
	// each is said once.
	foreignSeen map[string]bool
	// Cache, when set, shares polls with the user's other followers of
	// the cluster (SharePolls sets it).
	Cache *PollCache
	// limits are the queue limits Room read, by QOS and account.
	limitsMu sync.Mutex
	limits   map[string]*slurmLimits
}

// Name implements Scheduler.
func (s *Slurm) Name() string { return "slurm" }

// SubmitConcurrency is how many sbatch calls one submit runs at once:
// each is a round trip to the controller, and a sweep of several resource
// shapes or more cells than MaxArraySize makes several.
func (s *Slurm) SubmitConcurrency() int { return 4 }

// transientRE matches controller errors worth retrying.
var transientRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)socket timed out|unable to contact slurm controller|resource temporarily unavailable|connection refused|connect failure|slurm temporarily unable|communication connection failure|zero bytes were transmitted|transport endpoint|slurmctld is not responding|try again later|temporarily unable to accept`)
})

// hints name what to change for the permanent sbatch errors users meet:
// the first hint one of whose words (lower case) the message contains.
var hints = []struct {
	words []string
	hint  string
}{
	{[]string{"invalid partition"}, "check --partition or cluster.partition in the spec (sinfo lists partitions)"},
	{[]string{"invalid account"}, "check --account or cluster.account (sacctmgr show assoc user=$USER lists yours)"},
	{[]string{"invalid qos"}, "check --qos or cluster.qos (sacctmgr show assoc user=$USER format=qos)"},
	{[]string{"accounting/qos policy", "qosmax", "assocmax", "maxsubmit"}, "the job exceeds a limit of your account or QOS (submit or array limits, wall time); lower --max-running, split the sweep, or ask for another QOS"},
	{[]string{"invalid job array specification", "maxarraysize"}, "the array is larger than the cluster allows; re-render with a smaller --max-array-size"},
	{[]string{"requested node configuration is not available", "gres"}, "no node has the requested GPUs, CPUs or memory; check the topology's resources and --constraint"},
	{[]string{"time limit"}, "the topology's time limit exceeds the partition's MaxTime"},
	{[]string{"reservation"}, "check --reservation or cluster.reservation (scontrol show reservation)"},
}

// SlurmError is a failed Slurm command with its message.
type SlurmError struct {
	Cmd       string
	Msg       string
	Transient bool
}

func (e *SlurmError) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Cmd, e.Msg)
	lower := strings.ToLower(e.Msg)
	for _, h := range hints {
		for _, w := range h.words {
			if strings.Contains(lower, w) {
				return msg + "\n  what to change: " + h.hint
			}
		}
	}
	return msg
}

// exec1 runs one command once.
func (s *Slurm) exec1(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	s.Calls.Add(1)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), s.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A command left running when kvsweep dies (an sbatch in flight) is
	// killed with it: it cannot finish a submission after the next
	// kvsweep has settled its intent.
	err := runTied(cmd)
	if err == nil {
		return stdout.Bytes(), nil
	}
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		msg = strings.TrimSpace(stdout.String())
	}
	if msg == "" {
		msg = err.Error()
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		msg = fmt.Sprintf("%v (is Slurm installed and on PATH?)", ee)
	}
	return stdout.Bytes(), &SlurmError{Cmd: name, Msg: msg, Transient: transientRE().MatchString(msg)}
}

// backoff runs attempt until it succeeds, fails permanently, or the
// deadline passes; between tries it waits 1 s, 2 s, 4 s ... up to 30 s.
func (s *Slurm) backoff(ctx context.Context, what string, attempt func() error) error {
	deadline := s.Deadline
	if deadline == 0 {
		deadline = 10 * time.Minute
	}
	end := time.Now().Add(deadline)
	wait := time.Second
	for try := 1; ; try++ {
		err := attempt()
		var se *SlurmError
		if err == nil || !errors.As(err, &se) || !se.Transient {
			return err
		}
		if time.Now().Add(wait).After(end) {
			return fmt.Errorf("%w (still failing after %d tries over %s; raise --retry-deadline to wait longer)", err, try, deadline)
		}
		if s.Log != nil {
			fmt.Fprintf(s.Log, "kvsweep: %s: %s; retrying in %s\n", what, se.Msg, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 30*time.Second)
	}
}

// run is exec1 with retries, for idempotent commands.
func (s *Slurm) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	var out []byte
	err := s.backoff(ctx, name, func() error {
		var err error
		out, err = s.exec1(ctx, "", name, args...)
		return err
	})
	return out, err
}

// MaxArraySize is the cluster's MaxArraySize: from slurm.conf where this
// machine has it (the file every Slurm command here reads, and Slurm keeps
// the same on every node), else from scontrol show config, which asks the
// controller (configless clusters, a file that includes others).
func (s *Slurm) MaxArraySize(ctx context.Context) (int, error) {
	if n, ok := maxArrayFromConf(slurmConfPath()); ok {
		return n, nil
	}
	out, err := s.run(ctx, "scontrol", "show", "config")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "MaxArraySize" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("scontrol show config: MaxArraySize %q is not a number", strings.TrimSpace(v))
			}
			return n, nil
		}
	}
	return sweep.DefaultMaxArraySize, nil
}

// slurmConfPath is the slurm.conf Slurm's commands read here.
func slurmConfPath() string {
	if p := os.Getenv("SLURM_CONF"); p != "" {
		return p
	}
	return "/etc/slurm/slurm.conf"
}

// maxSlurmConfSize bounds the slurm.conf read for MaxArraySize.
const maxSlurmConfSize = 4 << 20

// maxArrayFromConf reads MaxArraySize from the slurm.conf at path: its
// value, Slurm's default when the file does not set it, or ok false when
// the file cannot say (unreadable, an Include, a value that is not a
// number), for the caller to ask the controller.
func maxArrayFromConf(path string) (n int, ok bool) {
	m, ok := confValues(path, map[string]bool{"maxarraysize": true})
	if !ok {
		return 0, false
	}
	v, set := m["maxarraysize"]
	if !set {
		return sweep.DefaultMaxArraySize, true
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 {
		return n, true
	}
	return 0, false
}

// confValues reads the wanted keys (lower case) of the slurm.conf at
// path, by their lower-case names; ok is false when the file cannot say
// (unreadable, or an Include that may set them elsewhere).
func confValues(path string, want map[string]bool) (map[string]string, bool) {
	b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), maxSlurmConfSize)
	if err != nil {
		return nil, false
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.EqualFold(fields[0], "include") {
			return nil, false
		}
		for _, f := range fields {
			k, v, _ := strings.Cut(f, "=")
			if k = strings.ToLower(k); want[k] {
				m[k] = v
			}
		}
	}
	return m, true
}

// SubmitArgs is the sbatch command line of a request, without "sbatch".
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

// Submit runs sbatch once per try. Before retrying after a transient error
// it looks for the job by name, since a timed-out sbatch may have been
// accepted: a request is submitted at most once.
func (s *Slurm) Submit(ctx context.Context, r SubmitRequest) (string, error) {
	var id string
	since := time.Now().Add(-time.Minute)
	first := true
	err := s.backoff(ctx, "sbatch", func() error {
		if !first {
			found, err := s.FindByName(ctx, r.JobName, since)
			if err == nil && len(found) > 0 {
				id = found[0]
				return nil
			}
		}
		first = false
		out, err := s.exec1(ctx, r.Dir, "sbatch", SubmitArgs(r)...)
		if err != nil {
			return err
		}
		id, err = ParseSbatchOutput(string(out))
		return err
	})
	return id, err
}

var submittedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Submitted batch job (\d+)`) })

// ParseSbatchOutput reads the job id from "123", "123;cluster" (--parsable)
// or "Submitted batch job 123".
func ParseSbatchOutput(out string) (string, error) {
	out = strings.TrimSpace(out)
	if m := submittedRE().FindStringSubmatch(out); m != nil {
		return m[1], nil
	}
	id, _, _ := strings.Cut(out, ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return id, nil
}

// FindByName returns the (array) job ids of jobs named name, from squeue
// and, where accounting runs, sacct (jobs started since since).
func (s *Slurm) FindByName(ctx context.Context, name string, since time.Time) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	add := func(out []byte) {
		for _, line := range strings.Split(string(out), "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			ref, err := ParseJobID(line)
			if err == nil && !seen[ref.JobID] {
				seen[ref.JobID] = true
				ids = append(ids, ref.JobID)
			}
		}
	}
	out, err := s.run(ctx, "squeue", "--noheader", "--states=all", "--name="+name, "--format=%i")
	if err != nil {
		return nil, err
	}
	add(out)
	out, err = s.run(ctx, "sacct", "--noheader", "--parsable2", "-X", "--name="+name,
		"--starttime="+since.Format("2006-01-02T15:04:05"), "--format=JobID")
	if err != nil && !accountingDisabled(err) {
		return nil, err
	}
	add(out)
	return ids, nil
}

func accountingDisabled(err error) bool {
	var se *SlurmError
	return errors.As(err, &se) && strings.Contains(strings.ToLower(se.Msg), "accounting storage is disabled")
}

// SharePolls makes Poll share its answers with the user's other followers
// of this cluster, taking none older than every (Watch calls it with its
// interval). $KVSWEEP_POLL_CACHE=off turns it off.
func (s *Slurm) SharePolls(every time.Duration) {
	if path := PollCachePath(s.Env); path != "" && every > 0 {
		s.Cache = &PollCache{Path: path, MaxAge: every}
	}
}

// Poll implements Scheduler: through the shared cache when SharePolls
// set one, else directly (poll); what it left out of jobs' answers as
// another job's is said once.
func (s *Slurm) Poll(ctx context.Context, jobs []PollJob) (*Poll, error) {
	var p *Poll
	var err error
	if s.Cache != nil && len(jobs) > 0 {
		p, err = s.Cache.Poll(ctx, jobs, s.poll)
	} else {
		p, err = s.poll(ctx, jobs)
	}
	if err != nil {
		return nil, err
	}
	var fresh []string
	for _, f := range p.Foreign {
		if !s.foreignSeen[f] {
			if s.foreignSeen == nil {
				s.foreignSeen = map[string]bool{}
			}
			s.foreignSeen[f] = true
			fresh = append(fresh, f)
		}
	}
	if len(fresh) > 0 && s.Log != nil {
		fmt.Fprintf(s.Log, "kvsweep: ignored what Slurm said of job ids now held by other jobs (the cluster's job ids were reset?): %s\n", strings.Join(fresh, ", "))
	}
	return p, nil
}

// poll asks Slurm for every task of the given (array) jobs: one sacct call
// for all of them, and one squeue call for pending reasons and for the
// states Slurm still holds where accounting is off. sacct is bounded by
// the earliest submission time and asked for every record of each id
// (--duplicates); a row whose job name is not the one submitted under
// that id belongs to another job (the cluster's ids were reset) and is
// left out, and so is such a row of squeue.
func (s *Slurm) poll(ctx context.Context, jobs []PollJob) (*Poll, error) {
	p := &Poll{Tasks: map[string]sweep.TaskState{}, Accounting: true}
	if len(jobs) == 0 {
		return p, nil
	}
	ids := make([]string, len(jobs))
	names := make(map[string]string, len(jobs))
	since := jobs[0].Since
	for i, j := range jobs {
		ids[i] = j.ID
		names[j.ID] = j.Name
		if j.Since.Before(since) {
			since = j.Since
		}
	}
	// A margin for clocks of the submitting host and the controller that
	// disagree; the name check is what tells jobs apart.
	start := since.Add(-sacctClockSlack).Local().Format("2006-01-02T15:04:05")
	out, err := s.run(ctx, "sacct", "--noheader", "--parsable2", "-X", "--duplicates", "--starttime="+start,
		"--jobs="+strings.Join(ids, ","), "--format=JobID,JobName,State,ExitCode,Elapsed,NodeList")
	switch {
	case accountingDisabled(err):
		p.Accounting = false
	case err != nil:
		return nil, err
	default:
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Split(strings.TrimSpace(line), "|")
			if len(f) < 6 || !p.ours(names, f[0], f[1], f[2]) {
				continue
			}
			ts := sweep.TaskState{State: NormalizeState(f[2]), Elapsed: f[4], Nodes: f[5], Source: "sacct"}
			ts.ExitCode, ts.Signal, _ = ParseExitCode(f[3])
			p.set(f[0], ts)
		}
	}
	out, err = s.run(ctx, "squeue", "--noheader", "--array", "--states=all", "--jobs="+strings.Join(ids, ","), "--format=%i|%j|%T|%r|%M|%N")
	var se *SlurmError
	if err != nil && !(errors.As(err, &se) && strings.Contains(se.Msg, "Invalid job id")) {
		return nil, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 6 || !p.ours(names, f[0], f[1], f[2]) {
			continue
		}
		ts := sweep.TaskState{State: NormalizeState(f[2]), Reason: f[3], Elapsed: f[4], Nodes: f[5], Source: "squeue"}
		if ts.Reason == "None" {
			ts.Reason = ""
		}
		p.merge(f[0], ts)
	}
	return p, nil
}

// sacctClockSlack widens sacct's time window below the earliest submission.
const sacctClockSlack = 10 * time.Minute

// ours reports whether a row (job id, name, state) of sacct or squeue is
// about the job submitted under that id, and notes it in Foreign if not.
func (p *Poll) ours(names map[string]string, id, name, state string) bool {
	ref, err := ParseJobID(id)
	if err != nil {
		return false
	}
	want, ok := names[ref.JobID]
	if !ok || want == "" || want == name {
		return ok
	}
	p.Foreign = append(p.Foreign, fmt.Sprintf("%s (%s, named %s)", ref.JobID, NormalizeState(state), name))
	return false
}

// Cancel runs scancel on the given job or task ids ("123", "123_4").
func (s *Slurm) Cancel(ctx context.Context, targets []string) error {
	if len(targets) == 0 {
		return nil
	}
	_, err := s.run(ctx, "scancel", targets...)
	return err
}
