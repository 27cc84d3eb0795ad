package scheduler

import (
	"strconv"

	"github.com/kvsweep/kvsweep/sweep"
)

// Poll is one round of scheduler answers, keyed by task: "JOBID_TASK" for
// array tasks, "JOBID" for plain jobs.
type Poll struct {
	Tasks map[string]sweep.TaskState
	// Accounting is false where sacct answered that accounting is disabled.
	Accounting bool
	// Foreign lists answers left out because the job id now belongs to a
	// job of another name: "123 (RUNNING, named kvs.other.s1)".
	Foreign []string
}

// TaskKey names a task of a job: "123_4", or "123" when task < 0.
func TaskKey(jobID string, task int) string {
	if task < 0 {
		return jobID
	}
	return jobID + "_" + strconv.Itoa(task)
}

// set records ts for a job id as sacct prints it ("123_[4-6%2]" covers three tasks).
func (p *Poll) set(id string, ts sweep.TaskState) {
	ref, err := ParseJobID(id)
	if err != nil || ref.Het != "" && ref.Het != "0" {
		return // hetjob components after the first are steps of one allocation
	}
	if ref.Tasks == nil {
		p.Tasks[ref.JobID] = ts
		return
	}
	for _, t := range ref.Tasks {
		p.Tasks[TaskKey(ref.JobID, t)] = ts
	}
}

// merge adds squeue's view: it fills tasks sacct does not show (yet, or at
// all without accounting) and adds pending reasons to those it does.
func (p *Poll) merge(id string, ts sweep.TaskState) {
	ref, err := ParseJobID(id)
	if err != nil {
		return
	}
	keys := []string{ref.JobID}
	if ref.Tasks != nil {
		keys = keys[:0]
		for _, t := range ref.Tasks {
			keys = append(keys, TaskKey(ref.JobID, t))
		}
	}
	for _, k := range keys {
		old, ok := p.Tasks[k]
		switch {
		case !ok || !Terminal(old.State) && old.State != ts.State:
			p.Tasks[k] = ts
		case ts.Reason != "" && old.Reason == "":
			old.Reason = ts.Reason
			p.Tasks[k] = old
		}
	}
}
