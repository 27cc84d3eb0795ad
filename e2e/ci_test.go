package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// ciJob runs testdata/ci-job.sh in work against cluster c and returns its
// output and exit status.
func ciJob(t *testing.T, c cluster, work, spec string, args ...string) (string, int) {
	t.Helper()
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("testdata/ci-job.sh", append([]string{work, spec}, args...)...)
	cmd.Env = append(append(os.Environ(), c.env()...), "KVSWEEP="+binary)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func ciSpec(t *testing.T, dir, name string, sims ...string) string {
	t.Helper()
	q := make([]string, len(sims))
	for i, s := range sims {
		q[i] = fmt.Sprintf("%q", s)
	}
	return writeSpec(t, dir, fmt.Sprintf(`version: 1
name: %s
container: {runtime: none}
cases:
  TC-01: {require: ["ttft_ms > 0"]}
harness:
  command: [python3, %q, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}", --sim, "{{.Params.sim}}"]
topologies:
  aggregated: {resources: {gpus_per_node: 1, cpus_per_task: 1, mem: 100M, time: 5m}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01, TC-04], sim: [%s]}
`, name, harness, strings.Join(q, ", ")))
}

// kvsweep ci end to end, as a CI job runs it: the first run has no
// baseline, writes the step summary and a JUnit file that validates, shows
// the failing cell's logs in a group and exits 3 for its FAIL; the second
// run on the same ref finds the first as its baseline and says what
// changed.
func TestCI(t *testing.T) {
	c := clusters(t)[0]
	t.Parallel()
	tmp := t.TempDir()
	spec := ciSpec(t, tmp, "cijob", "pass", "fail-case:TC-04")
	first := filepath.Join(tmp, "first")
	out, code := ciJob(t, c, first, spec)
	defer cancelSweep(t, c, filepath.Join(first, "sweep"))
	if code != 3 {
		t.Fatalf("first run exited %d, want 3 (a failed case):\n%s", code, out)
	}
	for _, want := range []string{
		"no stored run of cijob on main to compare with (a first run); reporting this run alone",
		"::group::cell vllm-aggregated-g-sim-fail-case-tc-04 (",
		"phase1-sim: TC-04 FAIL",
		"::endgroup::",
		"check failed: 1 failed case(s) (vllm-aggregated-g-sim-fail-case-tc-04 TC-04)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the CI log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "::group::cell vllm-aggregated-g-sim-pass ") {
		t.Errorf("the passing cell's logs were shown:\n%s", out)
	}
	summary, err := os.ReadFile(filepath.Join(first, "step-summary.md"))
	if err != nil || !strings.Contains(string(summary), "## Sweep cijob-") || !strings.Contains(string(summary), "| FAIL ") {
		t.Errorf("step summary (%v):\n%s", err, summary)
	}
	junit := filepath.Join(first, "junit.xml")
	if b, err := exec.Command("xmllint", "--noout", "--schema", "../reports/testdata/junit-ant.xsd", junit).CombinedOutput(); err != nil {
		t.Errorf("the JUnit file does not validate: %v\n%s", err, b)
	}
	if b, _ := os.ReadFile(junit); !bytes.Contains(b, []byte(`failures="1"`)) {
		t.Errorf("JUnit:\n%s", b)
	}

	second := filepath.Join(tmp, "second")
	out, code = ciJob(t, c, second, spec, "--threshold", "1000%")
	defer cancelSweep(t, c, filepath.Join(second, "sweep"))
	if code != 3 {
		t.Fatalf("second run exited %d, want 3:\n%s", code, out)
	}
	if !strings.Contains(out, "kvsweep ci: comparing with cijob-") {
		t.Errorf("the second run did not take the first as its baseline:\n%s", out)
	}
	summary, _ = os.ReadFile(filepath.Join(second, "step-summary.md"))
	if !strings.Contains(string(summary), "### What changed") || !strings.Contains(string(summary), "| nodes ") && !strings.Contains(string(summary), "ran the same image") {
		t.Errorf("the comparison does not open with what changed:\n%s", summary)
	}
}

// A cancelled workflow: SIGTERM to kvsweep ci mid-sweep cancels every job
// of the sweep within 10 s, says so, and exits non-zero.
func TestCICancelled(t *testing.T) {
	c := clusters(t)[0]
	t.Parallel()
	tmp := t.TempDir()
	spec := ciSpec(t, tmp, "cicancel", "sleep:600", "sleep:601", "sleep:602")
	work := filepath.Join(tmp, "job")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "sweep")
	cmd := exec.Command("testdata/ci-job.sh", work, spec)
	cmd.Env = append(append(os.Environ(), c.env()...), "KVSWEEP="+binary)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		cancelSweep(t, c, dir)
	}()
	for i := 0; !sweep.IsFile(dir, sweep.ManifestFile); i++ {
		if i == 600 {
			t.Fatalf("kvsweep ci rendered nothing in a minute:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitFor(t, c, dir, 3*time.Minute, "every cell running", func(cs []scheduler.CellStatus) bool {
		return len(cs) == 3 && scheduler.Counts(cs)[scheduler.StateRunning] == 3
	})
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	var werr error
	select {
	case werr = <-waited:
	case <-time.After(time.Minute):
		t.Fatalf("kvsweep ci did not exit after SIGTERM:\n%s", out.String())
	}
	// squeue still lists a cancelled job for a while, as CANCELLED or
	// COMPLETING; none of the sweep's may be pending or running.
	for {
		live := liveJobs(t, c, m.SweepID)
		if live == "" {
			break
		}
		if time.Since(sent) > 10*time.Second {
			t.Fatalf("10 s after SIGTERM the sweep still has live jobs:\n%s\nkvsweep ci said:\n%s", live, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if werr == nil {
		t.Errorf("kvsweep ci exited 0 after SIGTERM:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "interrupted: cancelled 3 task(s) of the sweep") {
		t.Errorf("kvsweep ci did not say it cancelled the sweep's jobs:\n%s", out.String())
	}
}

// liveJobs lists the sweep's jobs squeue shows pending, running or
// completing (their scripts may still write).
func liveJobs(t testing.TB, c cluster, sweepID string) string {
	t.Helper()
	cmd := exec.Command("squeue", "--noheader", "--array", "--states=PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED", "--format=%i|%j|%T")
	cmd.Env = append(os.Environ(), c.env()...)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	var live []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, "|"+sweep.JobName(sweepID, "")) {
			live = append(live, l)
		}
	}
	return strings.Join(live, "\n")
}
