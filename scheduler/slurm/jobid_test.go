package slurm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

func TestParseJobID(t *testing.T) {
	tests := []struct {
		in    string
		job   string
		tasks []int
		het   string
	}{
		{"123", "123", nil, ""},
		{"123_4", "123", []int{4}, ""},
		{"123_[5-9%2]", "123", []int{5, 6, 7, 8, 9}, ""},
		{"123_[1,4-6]", "123", []int{1, 4, 5, 6}, ""},
		{"123_[0-6:3]", "123", []int{0, 3, 6}, ""},
		{"123+1", "123", nil, "1"},
	}
	for _, tc := range tests {
		ref, err := ParseJobID(tc.in)
		if err != nil || ref.JobID != tc.job || !reflect.DeepEqual(ref.Tasks, tc.tasks) || ref.Het != tc.het {
			t.Errorf("%s: got %+v %v", tc.in, ref, err)
		}
	}
	for _, bad := range []string{"", "abc", "12_x", "12_[3-1]", "x+1"} {
		if _, err := ParseJobID(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestNormalizeState(t *testing.T) {
	for in, want := range map[string]string{
		"COMPLETED": scheduler.StateCompleted, "CANCELLED by 1000": scheduler.StateCancelled, "CANCELLED+": scheduler.StateCancelled,
		"OUT_OF_MEMORY": scheduler.StateOOM, "OOM": scheduler.StateOOM, "NODE_FAIL": scheduler.StateNodeFail, "TIMEOUT": scheduler.StateTimeout,
		"PREEMPTED": scheduler.StatePreempted, "BOOT_FAIL": scheduler.StateBootFail, "DEADLINE": scheduler.StateDeadline,
		"REQUEUED": scheduler.StateRequeued, "SPECIAL_EXIT": scheduler.StateSpecialExit, "PENDING": scheduler.StatePending,
		"COMPLETING": scheduler.StateRunning, "CONFIGURING": scheduler.StateRunning, "FAILED": scheduler.StateFailed, "PD": scheduler.StatePending,
	} {
		if got := NormalizeState(in); got != want {
			t.Errorf("%q: got %s want %s", in, got, want)
		}
	}
	if rc, sig, err := ParseExitCode("3:0"); rc != 3 || sig != 0 || err != nil {
		t.Errorf("3:0 -> %d %d %v", rc, sig, err)
	}
	if rc, sig, _ := ParseExitCode("0:15"); rc != 0 || sig != 15 {
		t.Errorf("0:15 -> %d %d", rc, sig)
	}
}

func TestParseSbatchOutput(t *testing.T) {
	for in, want := range map[string]string{"123\n": "123", "123;cluster\n": "123", "Submitted batch job 77\n": "77"} {
		if got, err := ParseSbatchOutput(in); got != want || err != nil {
			t.Errorf("%q: got %q %v", in, got, err)
		}
	}
	if _, err := ParseSbatchOutput("sbatch: error: oops"); err == nil {
		t.Error("garbage accepted")
	}
}

// Poll folds sacct and squeue lines: sacct's ranges cover each task, and
// squeue adds pending reasons without overriding a terminal sacct state.
func TestPollMerge(t *testing.T) {
	p := &scheduler.Poll{Tasks: map[string]sweep.TaskState{}, Accounting: true}
	set(p, "7_0", sweep.TaskState{State: scheduler.StateCompleted, Source: "sacct"})
	set(p, "7_[1-3%2]", sweep.TaskState{State: scheduler.StatePending, Source: "sacct"})
	merge(p, "7_0", sweep.TaskState{State: scheduler.StateRunning, Source: "squeue"})
	merge(p, "7_2", sweep.TaskState{State: scheduler.StatePending, Reason: "JobArrayTaskLimit", Source: "squeue"})
	merge(p, "8", sweep.TaskState{State: scheduler.StateRunning, Source: "squeue"})
	if p.Tasks["7_0"].State != scheduler.StateCompleted {
		t.Errorf("squeue overrode a terminal state: %+v", p.Tasks["7_0"])
	}
	if p.Tasks["7_3"].State != scheduler.StatePending || p.Tasks["7_2"].Reason != "JobArrayTaskLimit" {
		t.Errorf("range or reason lost: %+v", p.Tasks)
	}
	if p.Tasks["8"].State != scheduler.StateRunning {
		t.Errorf("squeue-only job lost: %+v", p.Tasks)
	}
}

// Transient controller errors are retried; permanent ones fail at once
// with a hint of what to change.
func TestErrorClassification(t *testing.T) {
	for _, msg := range []string{
		"sbatch: error: Batch job submission failed: Socket timed out on send/recv operation",
		"sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
		"sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying",
		"squeue: error: slurm_load_jobs error: Resource temporarily unavailable",
	} {
		if !transientRE().MatchString(msg) {
			t.Errorf("not transient: %s", msg)
		}
	}
	for msg, hint := range map[string]string{
		"sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)": "limit of your account or QOS",
		"sbatch: error: Batch job submission failed: Invalid partition name specified":                                                      "--partition",
		"sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified":                            "--account",
	} {
		if transientRE().MatchString(msg) {
			t.Errorf("transient: %s", msg)
		}
		e := &SlurmError{Cmd: "sbatch", Msg: msg}
		if !strings.Contains(e.Error(), hint) {
			t.Errorf("%s: no hint %q in %q", msg, hint, e.Error())
		}
	}
}
