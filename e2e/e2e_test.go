// Package e2e runs kvsweep against real Slurm clusters: one with accounting
// (slurmdbd) and one without, started by scripts/slurm-env.sh, which
// exports KVSWEEP_SLURM_ACCT and KVSWEEP_SLURM_NOACCT (their slurm.conf).
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/pgtest"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/slurm"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

var (
	binary  string // the kvsweep binary under test
	harness string // the simulated harness
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kvsweep-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "kvsweep")
	if out, err := exec.Command("go", "build", "-o", binary, "../cmd/kvsweep").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building kvsweep: %v\n%s", err, out)
		os.Exit(1)
	}
	harness, _ = filepath.Abs("../examples/harness/phase1_sim.py")
	code := m.Run()
	pgtest.StopShared()
	if testImage.git != nil {
		testImage.git.Stop()
	}
	if testImage.dir != "" {
		os.RemoveAll(testImage.dir)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

type cluster struct {
	name       string
	conf       string
	accounting bool
}

func (c cluster) env() []string { return []string{"SLURM_CONF=" + c.conf} }

// clusters returns the test clusters. They are required: the README's test
// command starts them; only -short runs without.
func clusters(t testing.TB) []cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real Slurm clusters of scripts/slurm-env.sh (not with -short)")
	}
	var out []cluster
	for _, c := range []struct {
		name, env string
		acct      bool
	}{{"acct", "KVSWEEP_SLURM_ACCT", true}, {"noacct", "KVSWEEP_SLURM_NOACCT", false}} {
		conf := os.Getenv(c.env)
		if conf == "" {
			t.Fatalf("%s is not set: start the clusters with scripts/slurm-env.sh start and eval \"$(scripts/slurm-env.sh env)\" (the README's test command does both)", c.env)
		}
		out = append(out, cluster{c.name, conf, c.acct})
	}
	return out
}

func (c cluster) slurm() *slurm.Slurm {
	return slurm.New(slurm.Config{Env: c.env(), Deadline: 2 * time.Minute,
		Conf: os.Getenv("SLURM_CONF"), PollCache: os.Getenv("KVSWEEP_POLL_CACHE"), User: os.Getenv("USER")})
}

// kvsweep runs the binary against cluster c.
func kvsweep(t testing.TB, c cluster, extraEnv []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), c.env()...), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func mustKvsweep(t testing.TB, c cluster, args ...string) string {
	t.Helper()
	out, errs, err := kvsweep(t, c, nil, args...)
	if err != nil {
		t.Fatalf("kvsweep %s: %v\n%s%s", strings.Join(args, " "), err, out, errs)
	}
	return out
}

// spec writes a sweep spec running the simulated harness with one cell per
// value of sims, on the given topologies, and renders it.
func renderSweep(t *testing.T, c cluster, name string, sims []string, topologies []string, extra string) (dir string, m *sweep.Manifest) {
	t.Helper()
	tmp := t.TempDir()
	var tops []string
	for _, tp := range topologies {
		tops = append(tops, fmt.Sprintf("  %s: {kind: aggregated, resources: {gpus_per_node: 1, cpus_per_task: 1, mem: 200M, time: 1m}}", tp))
	}
	q := make([]string, len(sims))
	for i, s := range sims {
		q[i] = fmt.Sprintf("%q", s)
	}
	spec := fmt.Sprintf(`version: 1
name: %s
container: {runtime: none}
harness:
  command: [python3, %q, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}", --sim, "{{.Params.sim}}"]
topologies:
%s
geometries: {g: {flags: {model: m}}}
matrix:
  engine: [vllm]
  topology: [%s]
  geometry: [g]
  case: [TC-01]
  sim: [%s]
%s`, name, harness, strings.Join(tops, "\n"), strings.Join(topologies, ", "), strings.Join(q, ", "), extra)
	path := writeSpec(t, tmp, spec)
	dir = filepath.Join(tmp, "sweep")
	mustKvsweep(t, c, "render", path, "--out", dir, "--sweep-id", fmt.Sprintf("%s-%s-%d", name, c.name, time.Now().UnixNano()%1e9))
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// waitFor polls status until cond holds or the timeout passes.
func waitFor(t *testing.T, c cluster, dir string, timeout time.Duration, what string, cond func([]scheduler.CellStatus) bool) []scheduler.CellStatus {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		cells, _, err := scheduler.Observe(context.Background(), dir, c.slurm())
		if err != nil {
			t.Fatal(err)
		}
		if cond(cells) {
			return cells
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not after %s: %s", what, timeout, describe(cells))
		}
		time.Sleep(time.Second)
	}
}

func describe(cells []scheduler.CellStatus) string {
	var b strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&b, "\n  %s %s %s exit=%d reason=%q source=%s", c.Name, c.Task, c.State, c.ExitCode, c.Reason, c.Source)
	}
	return b.String()
}

func byName(cells []scheduler.CellStatus) map[string]scheduler.CellStatus {
	m := map[string]scheduler.CellStatus{}
	for _, c := range cells {
		m[c.Name] = c
	}
	return m
}

// slurmTasks lists the array tasks Slurm knows for a sweep's job-name
// prefix, from squeue (and sacct where accounting runs): name -> task ids.
func slurmTasks(t *testing.T, c cluster, sweepID string) map[string][]string {
	t.Helper()
	prefix := sweep.JobName(sweepID, "")
	tasks := map[string]map[string]bool{}
	add := func(out []byte) {
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			id, name, ok := strings.Cut(line, "|")
			if !ok || !strings.HasPrefix(name, prefix) {
				continue
			}
			if tasks[name] == nil {
				tasks[name] = map[string]bool{}
			}
			tasks[name][id] = true
		}
	}
	cmd := exec.Command("squeue", "--noheader", "--array", "--states=all", "--format=%i|%j")
	cmd.Env = append(os.Environ(), c.env()...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	add(out)
	if c.accounting {
		cmd := exec.Command("sacct", "--noheader", "--parsable2", "-X", "--starttime=now-1hour", "--format=JobID,JobName")
		cmd.Env = append(os.Environ(), c.env()...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sacct: %v", err)
		}
		add(out)
	}
	res := map[string][]string{}
	for name, ids := range tasks {
		for id := range ids {
			if !strings.Contains(id, "[") { // a pending range is listed by task elsewhere
				res[name] = append(res[name], id)
			}
		}
	}
	return res
}

// cancelSweep cancels what is left of a sweep and waits (at most two
// minutes) until none of its jobs is pending, running or completing, so
// the test's directory is removed after the jobs stopped writing to it.
func cancelSweep(t testing.TB, c cluster, dir string) {
	_, _, _ = kvsweep(t, c, nil, "cancel", dir, "--scheduler", "slurm")
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		return
	}
	for end := time.Now().Add(2 * time.Minute); liveJobs(t, c, m.SweepID) != "" && time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
	}
}

// runCompleted runs the spec at path on the Slurm cluster c into dir
// (kvsweep run --wait, env added to kvsweep's environment, args after
// the defaults), cancels what is left when the test ends, and fails the
// test unless every cell completed, with the log of the first that did
// not.
func runCompleted(t *testing.T, c cluster, env []string, path, dir string, args ...string) []scheduler.CellStatus {
	t.Helper()
	t.Cleanup(func() { cancelSweep(t, c, dir) })
	argv := append([]string{"run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s"}, args...)
	if out, errs, err := kvsweep(t, c, env, argv...); err != nil {
		t.Fatalf("kvsweep run: %v\n%s%s", err, out, errs)
	}
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		if cs.State != scheduler.StateCompleted {
			t.Fatalf("%s: %s\n%s", cs.Name, cs.State, cellLog(dir, cs))
		}
	}
	return cells
}

// collectRun collects dir into a history store beside it and reads the
// run collect wrote.
func collectRun(t *testing.T, c cluster, dir string) *testrun.Run {
	t.Helper()
	mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(filepath.Dir(dir), "history.db"))
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// writeSpec writes a spec into dir and returns its path.
func writeSpec(t testing.TB, dir, spec string) string {
	t.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitGone waits until no process matches pattern (pgrep -f), failing
// with what if some still does after 2 minutes (a loaded machine can take
// a while to tear a job down): the processes a job started end with it.
// The failure shows each process's parent and cgroup, to tell whose it is.
func waitGone(t *testing.T, pattern, what string) {
	t.Helper()
	for end := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("pgrep", "-f", pattern).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			return
		}
		if time.Now().After(end) {
			var b strings.Builder
			for _, pid := range pids {
				ps, _ := exec.Command("ps", "-o", "pid,ppid,etime,args", "-p", pid).Output()
				cg, _ := os.ReadFile("/proc/" + pid + "/cgroup")
				fmt.Fprintf(&b, "%s%s\n", ps, cg)
			}
			t.Fatalf("%s:\n%s", what, b.String())
		}
	}
}
