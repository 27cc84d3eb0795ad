package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// SharePolls makes Poll share its answers with the user's other followers
// of this cluster, taking none older than every (Watch calls it with its
// interval). Config.PollCache "off" turns it off.
func (s *Slurm) SharePolls(every time.Duration) {
	if path := s.PollCachePath(); path != "" && every > 0 {
		s.Cache = &PollCache{Path: path, MaxAge: every}
	}
}

// Poll implements scheduler.Scheduler: through the shared cache when SharePolls
// set one, else directly (poll); what it left out of jobs' answers as
// another job's is said once.
func (s *Slurm) Poll(ctx context.Context, jobs []scheduler.PollJob) (*scheduler.Poll, error) {
	var p *scheduler.Poll
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
	if len(fresh) > 0 && s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "kvsweep: ignored what Slurm said of job ids now held by other jobs (the cluster's job ids were reset?): %s\n", strings.Join(fresh, ", "))
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
func (s *Slurm) poll(ctx context.Context, jobs []scheduler.PollJob) (*scheduler.Poll, error) {
	p := &scheduler.Poll{Tasks: map[string]sweep.TaskState{}, Accounting: true}
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
			if len(f) < 6 || !ours(p, names, f[0], f[1], f[2]) {
				continue
			}
			ts := sweep.TaskState{State: NormalizeState(f[2]), Elapsed: f[4], Nodes: f[5], Source: "sacct"}
			ts.ExitCode, ts.Signal, _ = ParseExitCode(f[3])
			set(p, f[0], ts)
		}
	}
	out, err = s.run(ctx, "squeue", "--noheader", "--array", "--states=all", "--jobs="+strings.Join(ids, ","), "--format=%i|%j|%T|%r|%M|%N")
	var se *SlurmError
	if err != nil && !(errors.As(err, &se) && strings.Contains(se.Msg, "Invalid job id")) {
		return nil, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 6 || !ours(p, names, f[0], f[1], f[2]) {
			continue
		}
		ts := sweep.TaskState{State: NormalizeState(f[2]), Reason: f[3], Elapsed: f[4], Nodes: f[5], Source: "squeue"}
		if ts.Reason == "None" {
			ts.Reason = ""
		}
		merge(p, f[0], ts)
	}
	return p, nil
}

// sacctClockSlack widens sacct's time window below the earliest submission.
const sacctClockSlack = 10 * time.Minute

// ours reports whether a row (job id, name, state) of sacct or squeue is
// about the job submitted under that id, and notes it in Foreign if not.
func ours(p *scheduler.Poll, names map[string]string, id, name, state string) bool {
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

// set records ts for a job id as sacct prints it ("123_[4-6%2]" covers three tasks).
func set(p *scheduler.Poll, id string, ts sweep.TaskState) {
	ref, err := ParseJobID(id)
	if err != nil || ref.Het != "" && ref.Het != "0" {
		return // hetjob components after the first are steps of one allocation
	}
	if ref.Tasks == nil {
		p.Tasks[ref.JobID] = ts
		return
	}
	for _, t := range ref.Tasks {
		p.Tasks[scheduler.TaskKey(ref.JobID, t)] = ts
	}
}

// merge adds squeue's view: it fills tasks sacct does not show (yet, or at
// all without accounting) and adds pending reasons to those it does.
func merge(p *scheduler.Poll, id string, ts sweep.TaskState) {
	ref, err := ParseJobID(id)
	if err != nil {
		return
	}
	keys := []string{ref.JobID}
	if ref.Tasks != nil {
		keys = keys[:0]
		for _, t := range ref.Tasks {
			keys = append(keys, scheduler.TaskKey(ref.JobID, t))
		}
	}
	for _, k := range keys {
		old, ok := p.Tasks[k]
		switch {
		case !ok || !scheduler.Terminal(old.State) && old.State != ts.State:
			p.Tasks[k] = ts
		case ts.Reason != "" && old.Reason == "":
			old.Reason = ts.Reason
			p.Tasks[k] = old
		}
	}
}
