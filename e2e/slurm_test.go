package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// TestOutage runs first and alone (it stops a controller): slurmctld is
// down when submit starts and back 20 s later; submit retries and every
// cell is submitted exactly once.
func TestOutage(t *testing.T) {
	c := clusters(t)[1] // noacct
	dir, m := renderSweep(t, c, "outage", []string{"pass", "exit:3"}, []string{"a", "b"}, "")
	defer cancelSweep(t, c, dir)
	ctl := func(action string) {
		out, err := exec.Command("../scripts/slurm-env.sh", action, c.name).CombinedOutput()
		if err != nil {
			t.Fatalf("slurm-env.sh %s: %v\n%s", action, err, out)
		}
	}
	ctl("ctld-stop")
	defer ctl("ctld-start")
	cmd := exec.Command(binary, "submit", dir, "--scheduler", "slurm", "--retry-deadline", "3m")
	cmd.Env = append(os.Environ(), c.env()...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	ctl("ctld-start")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("submit across the outage: %v\n%s", err, out.String())
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("submit did not finish after the controller came back:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "retrying in") {
		t.Errorf("submit did not report retries:\n%s", out.String())
	}
	checkExactlyOnce(t, c, dir, m)
}

// TestJobIDReset runs alone, after TestOutage (it rebuilds a controller):
// the accounting cluster's job ids are reset between two sweeps, so the
// second sweep's job gets the id of the first one's. Each sweep still
// reports its own job: the first its FAILED exit 3 (not the second's
// RUNNING), the second RUNNING, and status says it ignored the other job.
func TestJobIDReset(t *testing.T) {
	c := clusters(t)[0] // acct: sacct remembers both jobs
	reset := func() {
		t.Helper()
		if out, err := exec.Command("../scripts/slurm-env.sh", "ctld-reset", c.name).CombinedOutput(); err != nil {
			t.Fatalf("slurm-env.sh ctld-reset: %v\n%s", err, out)
		}
	}
	reset()
	first, _ := renderSweep(t, c, "reset1", []string{"exit:3"}, []string{"aggregated"}, "")
	mustKvsweep(t, c, "submit", first, "--scheduler", "slurm")
	before := waitFor(t, c, first, 3*time.Minute, "the first sweep's cell ends", scheduler.Done)[0]
	if before.State != scheduler.StateFailed || before.ExitCode != 3 {
		t.Fatalf("first sweep: %s exit %d, want FAILED exit 3", before.State, before.ExitCode)
	}
	reset()
	second, _ := renderSweep(t, c, "reset2", []string{"sleep:600"}, []string{"aggregated"}, "")
	defer cancelSweep(t, c, second)
	mustKvsweep(t, c, "submit", second, "--scheduler", "slurm")
	now := waitFor(t, c, second, 3*time.Minute, "the second sweep's cell runs", func(cs []scheduler.CellStatus) bool {
		return cs[0].State == scheduler.StateRunning
	})[0]
	if now.Task != before.Task {
		t.Fatalf("the reset did not reuse the job id: first %s, second %s", before.Task, now.Task)
	}
	// A fresh sweep directory copy without observed.json: only Slurm's
	// answers, so the name check is what keeps the jobs apart.
	if err := os.Remove(filepath.Join(first, sweep.ObservedFile)); err != nil {
		t.Fatal(err)
	}
	out, errs, err := kvsweep(t, c, nil, "status", first, "--scheduler", "slurm", "--format", "json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, errs)
	}
	if !strings.Contains(out, `"state": "FAILED"`) || !strings.Contains(out, `"exit_code": 3`) || strings.Contains(out, "RUNNING") {
		t.Errorf("the first sweep's status after the reset is not its own job's:\n%s", out)
	}
	if !strings.Contains(errs, "ignored what Slurm said of job ids now held by other jobs") || !strings.Contains(errs, "kvs.reset2") {
		t.Errorf("status did not say it ignored the other job:\n%s", errs)
	}
	again := waitFor(t, c, second, time.Minute, "the second sweep still running", func([]scheduler.CellStatus) bool { return true })[0]
	if again.State != scheduler.StateRunning {
		t.Errorf("second sweep: %s, want RUNNING", again.State)
	}
}

// eachCluster runs f as a parallel subtest on every test cluster.
func eachCluster(t *testing.T, f func(t *testing.T, c cluster)) {
	cs := clusters(t)
	t.Parallel()
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f(t, c)
		})
	}
}

func TestOutcomes(t *testing.T) {
	eachCluster(t, func(t *testing.T, c cluster) {
		sims := []string{"pass", "exit:3", "sleep:600", "sleep:300"}
		dir, _ := renderSweep(t, c, "outcomes", sims, []string{"aggregated"}, "")
		defer cancelSweep(t, c, dir)
		mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
		// Running, and past the start of its script: a job cancelled before
		// its shell has run a line cannot write its exit marker.
		cells := waitFor(t, c, dir, 2*time.Minute, "the cell to cancel is running", func(cs []scheduler.CellStatus) bool {
			v := byName(cs)["vllm-aggregated-g-sim-sleep-300"]
			return v.State == scheduler.StateRunning && strings.Contains(cellLog(dir, v), "kvsweep: cell "+v.ID+" on ")
		})
		victim := byName(cells)["vllm-aggregated-g-sim-sleep-300"].ID
		mustKvsweep(t, c, "cancel", dir, "--cells", victim)
		cells = waitFor(t, c, dir, 4*time.Minute, "every cell terminal", scheduler.Done)
		want := map[string]struct {
			state string
			exit  int
		}{
			"vllm-aggregated-g-sim-pass":      {scheduler.StateCompleted, 0},
			"vllm-aggregated-g-sim-exit-3":    {scheduler.StateFailed, 3},
			"vllm-aggregated-g-sim-sleep-600": {scheduler.StateTimeout, -1},
			"vllm-aggregated-g-sim-sleep-300": {scheduler.StateCancelled, -1},
		}
		check := func(cells []scheduler.CellStatus, when string) {
			t.Helper()
			got := byName(cells)
			for name, w := range want {
				g := got[name]
				if g.State != w.state || (w.exit >= 0 && g.ExitCode != w.exit) {
					t.Errorf("%s: %s: got %s exit %d (source %s), want %s exit %d", when, name, g.State, g.ExitCode, g.Source, w.state, w.exit)
				}
			}
		}
		check(cells, "when done")
		// The job's own exit marker agrees with Slurm. Slurm may call a
		// cancelled job CANCELLED before its exit trap has run, and on a
		// loaded machine the trap can take a while: wait for the markers.
		for end := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
			var unmarked []string
			for _, cs := range cells {
				if _, ok, _ := sweep.ReadExitMarker(dir, cs.ID); !ok {
					unmarked = append(unmarked, cs.Name+"\n"+cellLog(dir, cs))
				}
			}
			if len(unmarked) == 0 {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("no exit marker after 2m0s: %s", strings.Join(unmarked, "\n"))
			}
		}
		for _, cs := range cells {
			mk, ok, err := sweep.ReadExitMarker(dir, cs.ID)
			if err != nil || !ok {
				t.Errorf("%s: no exit marker: %v", cs.Name, err)
				continue
			}
			if cs.State == scheduler.StateFailed && mk.ExitCode != 3 {
				t.Errorf("%s: exit marker says %d", cs.Name, mk.ExitCode)
			}
		}
		if !c.accounting {
			// Once squeue has forgotten the jobs (MinJobAge), status still
			// knows how each ended.
			time.Sleep(45 * time.Second)
			s := c.slurm()
			cells, poll, err := scheduler.Status(context.Background(), dir, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(poll.Tasks) != 0 {
				t.Fatalf("squeue still lists %d tasks after MinJobAge", len(poll.Tasks))
			}
			check(cells, "after Slurm forgot the jobs")
		}
	})
}

// With --max-running 2, never more than two tasks of the array run at once.
func TestThrottle(t *testing.T) {
	eachCluster(t, func(t *testing.T, c cluster) {
		dir, _ := renderSweep(t, c, "throttle", []string{"sleep:6", "sleep:6.1", "sleep:6.2", "sleep:6.3", "sleep:6.4", "sleep:6.5"}, []string{"aggregated"}, "")
		defer cancelSweep(t, c, dir)
		mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm", "--max-running", "2")
		maxSeen := 0
		end := time.Now().Add(3 * time.Minute)
		for {
			cells, _, err := scheduler.Status(context.Background(), dir, c.slurm())
			if err != nil {
				t.Fatal(err)
			}
			running := scheduler.Counts(cells)[scheduler.StateRunning]
			if running > 2 {
				t.Fatalf("%d tasks running with --max-running 2: %s", running, describe(cells))
			}
			maxSeen = max(maxSeen, running)
			if scheduler.Done(cells) {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("not done: %s", describe(cells))
			}
			time.Sleep(300 * time.Millisecond)
		}
		if maxSeen != 2 {
			t.Errorf("at most %d tasks ran at once; the throttle allows 2", maxSeen)
		}
	})
}

// resubmit --failed submits exactly the cells that failed, as one array
// over their indices.
func TestResubmitFailed(t *testing.T) {
	c := clusters(t)[0]
	t.Parallel()
	dir, m := renderSweep(t, c, "resubmit", []string{"pass", "exit:3", "pass-2", "exit:4"}, []string{"aggregated"}, "")
	_ = m
	defer cancelSweep(t, c, dir)
	// "pass-2" is not a mode the simulator knows: it exits 2, a third failure kind.
	mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
	cells := waitFor(t, c, dir, 2*time.Minute, "first round done", scheduler.Done)
	var failed []int
	for _, cs := range cells {
		if cs.State != scheduler.StateCompleted {
			failed = append(failed, cs.Index)
		}
	}
	if len(failed) != 3 {
		t.Fatalf("want 3 failed cells: %s", describe(cells))
	}
	out := mustKvsweep(t, c, "resubmit", dir, "--failed")
	if !strings.Contains(out, "submitted 3 cells") || !strings.Contains(out, "in 1 sbatch calls") {
		t.Errorf("resubmit: %s", out)
	}
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	subs := sweep.Submissions(recs)
	last := subs[len(subs)-1].Intent
	if want := sweep.FormatIndices(failed); last.Indices != want {
		t.Errorf("resubmitted indices %s, want the failed cells %s", last.Indices, want)
	}
	cells = waitFor(t, c, dir, 2*time.Minute, "second round done", scheduler.Done)
	for _, cs := range cells {
		wantAttempts := 1
		if cs.State != scheduler.StateCompleted {
			wantAttempts = 2
		}
		if cs.Attempt != wantAttempts {
			t.Errorf("%s: %d attempts, want %d", cs.Name, cs.Attempt, wantAttempts)
		}
	}
	// Nothing left to resubmit among pending, running or completed cells.
	if out := mustKvsweep(t, c, "resubmit", dir, "--missing"); !strings.Contains(out, "nothing to resubmit") {
		t.Errorf("resubmit --missing: %s", out)
	}
}

// Killing submit at any step, then submitting again, leaves every cell
// submitted exactly once, as Slurm itself reports by job name.
func TestCrashRecovery(t *testing.T) {
	steps := []string{"manifest", "reconciled", "intent:1", "intent:2", "sbatch:1", "sbatch:2", "submitted:1", "submitted:2"}
	eachCluster(t, func(t *testing.T, c cluster) {
		for _, step := range steps {
			t.Run(strings.ReplaceAll(step, ":", "-"), func(t *testing.T) {
				dir, m := renderSweep(t, c, "crash", []string{"sleep:20", "sleep:21"}, []string{"a", "b"}, "")
				defer cancelSweep(t, c, dir)
				_, errs, err := kvsweep(t, c, []string{"KVSWEEP_TEST_CRASH_AT=" + step}, "submit", dir, "--scheduler", "slurm")
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("submit was not killed at %s: %v\n%s", step, err, errs)
				}
				out, errs, err := kvsweep(t, c, nil, "submit", dir, "--scheduler", "slurm")
				if err != nil {
					t.Fatalf("second submit: %v\n%s%s", err, out, errs)
				}
				// The two arrays' intents are written together, then both
				// sbatch calls run at once. A crash after the intents leaves
				// two Slurm never got; after the first sbatch returned, that
				// job for the second submit to adopt and the other either
				// adopted or never received (it was killed with submit);
				// after both, two to adopt.
				var adopted, never int
				if m := regexp.MustCompile(`(\d+) adopted from Slurm, (\d+) never received`).FindStringSubmatch(errs); m != nil {
					adopted, _ = strconv.Atoi(m[1])
					never, _ = strconv.Atoi(m[2])
				} else if strings.HasPrefix(step, "intent") || strings.HasPrefix(step, "sbatch") {
					t.Fatalf("after a crash at %s the second submit settled nothing: %q", step, errs)
				}
				switch {
				case strings.HasPrefix(step, "intent") && (adopted != 0 || never != 2),
					step == "sbatch:1" && (adopted < 1 || adopted+never != 2),
					step == "sbatch:2" && (adopted != 2 || never != 0):
					t.Errorf("after a crash at %s: %d adopted, %d never received: %q", step, adopted, never, errs)
				}
				checkExactlyOnce(t, c, dir, m)
			})
		}
	})
}

// checkExactlyOnce asserts that Slurm holds one task per cell of the sweep
// and the journal names each of those jobs.
func checkExactlyOnce(t *testing.T, c cluster, dir string, m *sweep.Manifest) {
	t.Helper()
	tasks := slurmTasks(t, c, m.SweepID)
	total := 0
	for _, ids := range tasks {
		total += len(ids)
	}
	if total != len(m.Cells) {
		t.Fatalf("Slurm holds %d tasks for %d cells: %v", total, len(m.Cells), tasks)
	}
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	inJournal := map[string]bool{}
	covered := 0
	for _, s := range sweep.Submissions(recs) {
		if s.JobID == "" && !s.Abandoned {
			t.Errorf("submission %d left unconfirmed", s.Intent.Seq)
		}
		if s.JobID != "" {
			inJournal[s.Intent.JobName] = true
			idx, _ := sweep.ParseIndices(s.Intent.Indices)
			covered += len(idx)
		}
	}
	for name := range tasks {
		if !inJournal[name] {
			t.Errorf("Slurm has job %s the journal does not name", name)
		}
	}
	if covered != len(m.Cells) {
		t.Errorf("journal covers %d cells, want %d", covered, len(m.Cells))
	}
}

// One status poll of a sweep costs one sacct and one squeue call.
func TestPollCost(t *testing.T) {
	c := clusters(t)[0]
	t.Parallel()
	dir, _ := renderSweep(t, c, "poll", []string{"pass", "exit:3", "sleep:2"}, []string{"a", "b", "c"}, "")
	mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
	s := c.slurm()
	if _, _, err := scheduler.Status(context.Background(), dir, s); err != nil {
		t.Fatal(err)
	}
	if s.Calls.Load() != 2 {
		t.Errorf("one poll of 9 cells in 3 arrays made %d Slurm calls, want 2 (sacct + squeue)", s.Calls.Load())
	}
	waitFor(t, c, dir, 2*time.Minute, "done", scheduler.Done)
}
