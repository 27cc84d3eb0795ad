package sweep

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/internal/names"
)

// The identity a sweep's jobs carry into the scheduler. Every submission
// is named after its sweep, job and journal sequence number, so a crash
// between the scheduler accepting a job and the journal recording it is
// recovered by looking the name up in the scheduler.

var sweepIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckID reports whether id can name a sweep: letters, digits, '.', '_'
// and '-', starting with a letter or digit.
func CheckID(id string) error {
	if !sweepIDRE.MatchString(id) || len(id) > 128 {
		return fmt.Errorf("sweep id %q: expected at most 128 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// NewID makes a fresh sweep id: the spec name and six random hex digits.
func NewID(name string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// JobName is the scheduler's job name of a sweep's job.
func JobName(sweepID, job string) string {
	return names.Sanitize("kvs." + sweepID + "." + job)
}

// JobTag is the comment every job of a sweep carries, so the scheduler
// itself can tell which parts of which sweep are submitted.
func JobTag(sweepID, job string) string {
	return "kvsweep:" + sweepID + ":" + job
}

// SubmissionName is the job name of submission seq of a job:
// "kvs.SWEEP.JOB.sSEQ".
func SubmissionName(sweepID, job string, seq int) string {
	return JobName(sweepID, job) + ".s" + strconv.Itoa(seq)
}

// SubmissionTag is the comment of submission seq: "kvsweep:SWEEP:JOB:sSEQ".
func SubmissionTag(sweepID, job string, seq int) string {
	return JobTag(sweepID, job) + ":s" + strconv.Itoa(seq)
}

// SubmissionSeq reads the sequence number back from a SubmissionName.
func SubmissionSeq(name string) (int, bool) {
	i := strings.LastIndex(name, ".s")
	if i < 0 {
		return 0, false
	}
	seq, err := strconv.Atoi(name[i+2:])
	return seq, err == nil && seq > 0
}
