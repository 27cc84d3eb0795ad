package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/scheduler"
)

// sbatch's refusals reach submit as scheduler.RefusedError: a submit
// limit (of the user, the QOS or the association's group) is no room
// yet, a permanent refusal is for good, a transient error whose retries
// gave up leaves the submission open; the message is the SlurmError's,
// hint and all, and an error that is no refusal passes unchanged.
func TestRefusal(t *testing.T) {
	limit := &SlurmError{Cmd: "sbatch", Msg: "QOSMaxSubmitJobPerUserLimit\nBatch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"}
	gone := &SlurmError{Cmd: "sbatch", Msg: "Socket timed out on send/recv operation", Transient: true}
	for _, c := range []struct {
		err               error
		transient, noRoom bool
	}{
		{limit, false, true},
		{&SlurmError{Cmd: "sbatch", Msg: "Batch job submission failed: AssocGrpSubmitJobsLimit"}, false, true},
		{&SlurmError{Cmd: "sbatch", Msg: "Batch job submission failed: Invalid partition name specified"}, false, false},
		{fmt.Errorf("%w (still failing after 3 tries over 1s; raise --retry-deadline to wait longer)", gone), true, false},
		{&SlurmError{Cmd: "sbatch", Msg: "MaxSubmitJobsPerUser: try again later", Transient: true}, true, false},
	} {
		var re *scheduler.RefusedError
		got := refusal(c.err)
		if !errors.As(got, &re) {
			t.Errorf("%v: not a refusal: %T", c.err, got)
			continue
		}
		var se *SlurmError
		errors.As(c.err, &se)
		if re.Transient != c.transient || re.NoRoom != c.noRoom || re.Msg != se.Msg || got.Error() != c.err.Error() || !errors.As(got, &se) {
			t.Errorf("%v: got %+v (%q), want transient %v, no room %v, the message and the SlurmError kept", c.err, re, got.Error(), c.transient, c.noRoom)
		}
	}
	if err := refusal(context.Canceled); err != context.Canceled {
		t.Errorf("an interruption became %v", err)
	}
}

// On a machine that is no Slurm client, Slurm's commands fail looking the
// controller up in DNS; the error says how to run the cells here instead.
func TestNoSlurmHint(t *testing.T) {
	e := &SlurmError{Cmd: "scontrol", Msg: "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\nscontrol: error: fetch_config: DNS SRV lookup failed\nscontrol: fatal: Could not establish a configuration source"}
	if got := e.Error(); !strings.Contains(got, "what to change: this machine is no Slurm client") || !strings.Contains(got, "--scheduler local") {
		t.Errorf("no hint naming --scheduler local: %q", got)
	}
	if e.Transient || transientRE().MatchString(e.Msg) {
		t.Errorf("a machine without Slurm is retried: %q", e.Msg)
	}
}
