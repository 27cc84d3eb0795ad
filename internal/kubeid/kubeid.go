// Package kubeid is the identity a sweep's Kubernetes objects carry:
// label and annotation names, the environment a submission fills in, and
// the label values made from sweep and job names. The renderer (kubejob)
// and the scheduler (scheduler/k8s) share it.
package kubeid

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// Labels and annotations every object of a sweep carries. The sweep and
// submission labels are what kvsweep lists, adopts and deletes by.
const (
	LabelManaged    = "app.kubernetes.io/managed-by"
	LabelSweep      = "kvsweep.io/sweep"
	LabelJob        = "kvsweep.io/job"
	LabelSubmission = "kvsweep.io/submission"
	// LabelCell names the cell of a Job of one cell (two-node, --no-array).
	LabelCell = "kvsweep.io/cell"
	// AnnotationJob is the manifest's job name (labels cannot hold dots
	// and slashes of every name).
	AnnotationJob = "kvsweep.io/job"
	// AnnotationTasks is the submission's task list (--array syntax): the
	// task completion index i stands for is its i-th.
	AnnotationTasks = "kvsweep.io/tasks"
	// AnnotationSubmission is the submission's name as the journal has it.
	AnnotationSubmission = "kvsweep.io/submission"
	// AnnotationBootFailed, followed by a completion index, records on
	// the Job why kvsweep ended that index's pod before it could start
	// (its image, its secret), so the cell reads BOOT_FAIL once the pod
	// is gone.
	AnnotationBootFailed = "kvsweep.io/boot-failed."
	// ContainerName is the one container of every pod.
	ContainerName = "cell"
	// VolumeName is the volume that holds the sweep directory.
	VolumeName = "sweeps"
)

// Environment variables a submission fills in (k8s.Fill).
const (
	EnvSweepDir = "KVSWEEP_SWEEP_DIR"
	EnvTasks    = "KVSWEEP_TASKS"
	EnvOffset   = "KVSWEEP_INDEX_OFFSET"
	EnvJob      = "KVSWEEP_JOB"
)

var nonLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// Sanitize lower-cases s and turns every run of characters outside
// [a-z0-9] (but '-') into one '-', trimmed at both ends.
func Sanitize(s string) string {
	return strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// LabelValue makes s a label value (and a DNS label) that names s alone:
// s itself when it is one already, else its sanitized form (at most 54
// characters) and a hash of s.
func LabelValue(s string) string {
	v := Sanitize(s)
	if v == s && len(v) <= 63 {
		return v
	}
	if len(v) > 54 {
		v = strings.TrimRight(v[:54], "-")
	}
	sum := sha256.Sum256([]byte(s))
	return v + "-" + hex.EncodeToString(sum[:4])
}
