package slurm

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/scheduler"
)

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
	// Slurm's commands on a machine that is no Slurm client: without a
	// slurm.conf they look the controller up in DNS and fail.
	{noSlurmWords, noSlurmHint},
}

// noSlurmWords are what Slurm's commands say on a machine with no Slurm
// configured: no slurm.conf, and no controller found in DNS.
var noSlurmWords = []string{"dns srv lookup failed", "resolve_ctls_from_dns_srv", "could not establish a configuration source", "failed to fetch config", "slurm.conf"}

// noSlurmHint says how to run a sweep where there is no Slurm.
const noSlurmHint = "this machine is no Slurm client (no slurm.conf, no controller found in DNS); to run the cells here set scheduler: local in the spec or pass --scheduler local (--scheduler k8s for Kubernetes)"

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

func accountingDisabled(err error) bool {
	var se *SlurmError
	return errors.As(err, &se) && strings.Contains(strings.ToLower(se.Msg), "accounting storage is disabled")
}

// refusal is err as submit reads it: a failed sbatch (a *SlurmError,
// however wrapped) becomes a scheduler.RefusedError that says whether it
// was transient or for a submit limit, and keeps err's message; any
// other error (interrupted, an answer that is not a job id) is err.
func refusal(err error) error {
	var se *SlurmError
	if !errors.As(err, &se) {
		return err
	}
	return &scheduler.RefusedError{Msg: se.Msg, Transient: se.Transient, NoRoom: noRoom(se), Err: err}
}

// noRoom reports whether sbatch refused a submission for a submit limit
// of the user's association or QOS (MaxSubmitJobs, MaxSubmitJobsPerUser,
// GrpSubmitJobs): no room in the queue yet, not a failure of the cells.
func noRoom(se *SlurmError) bool {
	if se.Transient {
		return false
	}
	m := strings.ToLower(se.Msg)
	return strings.Contains(m, "maxsubmitjob") || strings.Contains(m, "grpsubmitjob")
}
