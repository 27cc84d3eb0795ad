package scheduler

import (
	"strconv"

	"github.com/kvsweep/kvsweep/sweep"
)

// Poll is one round of scheduler answers, keyed by task: "JOBID_TASK" for
// array tasks, "JOBID" for plain jobs.
type Poll struct {
	Tasks map[string]sweep.TaskState
	// Accounting is false where the scheduler keeps no record of ended
	// jobs (sacct answered that accounting is disabled).
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
