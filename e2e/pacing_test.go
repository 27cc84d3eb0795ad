package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// A sweep larger than the queue lets the user have, on the cluster with
// accounting (which enforces limits): the test makes a QOS of its own
// with MaxSubmitJobsPerUser=5 and the spec submits under it. submit sends
// five cells and says 35 wait, naming the limit; followers (status
// --watch) SIGKILLed at random moments in five rounds, then one to the
// end, submit the rest as room appears. Every cell COMPLETED, Slurm holds
// one task per cell and the journal names each.
func TestPacedByQOSLimit(t *testing.T) {
	c := acctCluster(t)
	t.Parallel()
	qos := fmt.Sprintf("kvspace%d", time.Now().UnixNano()%1e9)
	sacctmgr(t, c, "add", "qos", qos, "MaxSubmitJobsPerUser=5")
	t.Cleanup(func() {
		sacctmgrQuiet(c, "modify", "user", "root", "set", "qos-="+qos)
		sacctmgrQuiet(c, "delete", "qos", qos)
	})
	sacctmgr(t, c, "modify", "user", "root", "set", "qos+="+qos)

	dir, m := renderSweep(t, c, "paced", sleeps(40), []string{"a"}, fmt.Sprintf("cluster: {qos: %s}\n", qos))
	defer cancelSweep(t, c, dir)
	out := mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
	want := fmt.Sprintf("35 cells wait for room in the queue (QOS %s MaxSubmitJobsPerUser 5, 0 in use)", qos)
	if !strings.Contains(out, "submitted 5 cells") || !strings.Contains(out, want) {
		t.Fatalf("submit said:\n%s\nwant 5 submitted and %q", out, want)
	}
	followKilled(t, c, dir, 5)
	finishPaced(t, c, dir, m)
}

// A limit kvsweep cannot read (an account's GrpSubmitJobs, which
// sacctmgr shows on the account, not on the user's association) makes
// sbatch refuse: that is no room yet, not a failure. The cells wait, later
// rounds submit at most half as many at once, and every cell COMPLETED
// once.
func TestPacedBySbatchRefusal(t *testing.T) {
	c := acctCluster(t)
	t.Parallel()
	acct := fmt.Sprintf("kvsgrp%d", time.Now().UnixNano()%1e9)
	sacctmgr(t, c, "add", "account", acct, "GrpSubmitJobs=4")
	t.Cleanup(func() {
		sacctmgrQuiet(c, "delete", "user", "where", "name=root", "account="+acct)
		sacctmgrQuiet(c, "delete", "account", acct)
	})
	sacctmgr(t, c, "add", "user", "root", "account="+acct)

	dir, m := renderSweep(t, c, "refused", sleeps(12), []string{"a"}, fmt.Sprintf("cluster: {account: %s}\n", acct))
	defer cancelSweep(t, c, dir)
	out := mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
	if !strings.Contains(out, "12 cells wait for room in the queue (sbatch: error: AssocGrpSubmitJobsLimit)") {
		t.Fatalf("submit said:\n%s\nwant the 12 cells waiting after sbatch's refusal", out)
	}
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !sweep.Paced(recs) || sweep.Fit(recs) != 6 {
		t.Errorf("after the refusal of 12 cells the journal says paced %v, fit %d; want at most 6 at once", sweep.Paced(recs), sweep.Fit(recs))
	}
	finishPaced(t, c, dir, m)
}

// followKilled starts status --watch on dir rounds times, each killed
// with SIGKILL after a random moment of up to three seconds.
func followKilled(t *testing.T, c cluster, dir string, rounds int) {
	t.Helper()
	for range rounds {
		cmd := exec.Command(binary, "status", dir, "--watch", "--interval", "1s", "--scheduler", "slurm", "--quiet")
		cmd.Env = append(os.Environ(), c.env()...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(200+rand.IntN(2800)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

// finishPaced follows dir to the end and checks every cell COMPLETED,
// exactly once.
func finishPaced(t *testing.T, c cluster, dir string, m *sweep.Manifest) {
	t.Helper()
	out, errs, err := kvsweep(t, c, nil, "status", dir, "--watch", "--interval", "1s", "--scheduler", "slurm", "--quiet")
	if err != nil {
		t.Fatalf("status --watch: %v\n%s%s", err, out, errs)
	}
	cells, _, err := scheduler.Status(context.Background(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		if cs.State != scheduler.StateCompleted || cs.Attempt != 1 {
			t.Errorf("%s: %s after %d attempts, want COMPLETED once: %s", cs.Name, cs.State, cs.Attempt, cs.Reason)
		}
	}
	checkExactlyOnce(t, c, dir, m)
}

// sleeps are n distinct short sims.
func sleeps(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("sleep:0.%02d", i+1)
	}
	return out
}

// acctCluster is the cluster with accounting.
func acctCluster(t *testing.T) cluster {
	t.Helper()
	for _, c := range clusters(t) {
		if c.accounting {
			return c
		}
	}
	t.Fatal("no cluster with accounting")
	return cluster{}
}

// sacctmgr runs sacctmgr -i against c's accounting.
func sacctmgr(t *testing.T, c cluster, args ...string) {
	t.Helper()
	cmd := exec.Command("sacctmgr", append([]string{"-i"}, args...)...)
	cmd.Env = append(os.Environ(), c.env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sacctmgr %v: %v\n%s", args, err, out)
	}
}

// sacctmgrQuiet is sacctmgr for cleanups: what fails is left.
func sacctmgrQuiet(c cluster, args ...string) {
	cmd := exec.Command("sacctmgr", append([]string{"-i"}, args...)...)
	cmd.Env = append(os.Environ(), c.env()...)
	_ = cmd.Run()
}
