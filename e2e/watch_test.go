package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/shq"
	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// views is a tmux server of its own (a socket in the test's directory)
// whose sessions run kvsweep watch, 160 x 48, as a user's terminal would.
type views struct {
	t    *testing.T
	sock string
	dir  string
}

func newViews(t *testing.T) *views {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (scripts/test.sh installs it)")
	}
	v := &views{t: t, dir: t.TempDir()}
	v.sock = filepath.Join(v.dir, "tmux.sock")
	t.Cleanup(func() {
		// The views end with the tmux server, but not at once: wait until
		// each is gone, so none writes into a directory being removed.
		out, _ := exec.Command("tmux", "-S", v.sock, "list-panes", "-a", "-F", "#{pane_pid}").Output()
		_ = exec.Command("tmux", "-S", v.sock, "kill-server").Run()
		for _, f := range strings.Fields(string(out)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			for end := time.Now().Add(2 * time.Minute); syscall.Kill(pid, 0) == nil && time.Now().Before(end); {
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
	return v
}

// open starts session name running kvsweep watch with args, under env
// (a launcher script sets it: the tmux server's own environment is not
// the test's); what kvsweep says on stderr goes to a file shown when a
// wait fails.
func (v *views) open(name string, env []string, args ...string) {
	v.t.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, kv := range env {
		k, val, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shq.Quote(val))
	}
	fmt.Fprintf(&b, "exec %s watch %s 2>>%s\n", shq.Quote(binary), shq.Join(args), shq.Quote(filepath.Join(v.dir, name+".err")))
	launcher := filepath.Join(v.dir, name+".sh")
	if err := os.WriteFile(launcher, []byte(b.String()), 0o755); err != nil {
		v.t.Fatal(err)
	}
	if out, err := exec.Command("tmux", "-S", v.sock, "new-session", "-d", "-s", name, "-x", "160", "-y", "48", launcher).CombinedOutput(); err != nil {
		v.t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
}

// screen is what session name shows now.
func (v *views) screen(name string) string {
	out, err := exec.Command("tmux", "-S", v.sock, "capture-pane", "-p", "-t", name).Output()
	if err != nil {
		return "(no pane: " + err.Error() + ")"
	}
	return string(out)
}

func (v *views) keys(name string, keys ...string) {
	v.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-S", v.sock, "send-keys", "-t", name}, keys...)...).CombinedOutput(); err != nil {
		v.t.Fatalf("tmux send-keys %v: %v\n%s", keys, err, out)
	}
}

// waitFor waits until session name's screen satisfies cond, failing
// with the screen and kvsweep's stderr after timeout.
func (v *views) waitFor(name, what string, timeout time.Duration, cond func(string) bool) string {
	v.t.Helper()
	end := time.Now().Add(timeout)
	for {
		s := v.screen(name)
		if cond(s) {
			return s
		}
		if time.Now().After(end) {
			errs, _ := os.ReadFile(filepath.Join(v.dir, name+".err"))
			v.t.Fatalf("%s: not after %s; the screen:\n%s\nstderr:\n%s", what, timeout, s, errs)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// rowState is the state the screen's row of cell id shows ("" no row).
func rowState(screen, id string) string {
	for l := range strings.Lines(screen) {
		f := strings.Fields(strings.TrimPrefix(l, ">"))
		if len(f) >= 4 && f[0] == id {
			for _, w := range f[1:] {
				if w == strings.ToUpper(w) && strings.Trim(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
					return w
				}
			}
		}
	}
	return ""
}

// kvsweep watch on the test cluster, in tmux as a user has it: three
// cells that print a line a second; the view shows them change state as
// they run, follows the long one's log tail once selected, asks before
// cancelling it and cancels only that cell (the others finish), asks
// before submitting it again and does, and q leaves the sweep's records
// as they were. The final screen's counts and
// rows, normalised, are a golden.
func TestWatchLive(t *testing.T) {
	c := clusters(t)[0]
	tmp := t.TempDir()
	harness, _ := filepath.Abs("testdata/tick-harness.sh")
	path := writeSpec(t, tmp, fmt.Sprintf(`version: 1
name: watchlive
container: {runtime: none}
harness:
  command: [%q, "{{.Params.n}}"]
  cases_flag: ""
topologies: {a: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 100M, time: 10m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [a], geometry: [g], case: [TC-01], n: ["20", "400", "25"]}
`, harness))
	dir := filepath.Join(tmp, "sweep")
	mustKvsweep(t, c, "render", path, "--out", dir, "--sweep-id", fmt.Sprintf("watchlive-%d", time.Now().UnixNano()%1e9))
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancelSweep(t, c, dir) })
	mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
	var long sweep.Cell
	var short []sweep.Cell
	at := 0
	for i, cell := range m.Cells {
		if cell.Params["n"] == "400" {
			long, at = cell, i
		} else {
			short = append(short, cell)
		}
	}
	v := newViews(t)
	v.open("w", append(c.env(), "KVSWEEP_POLL_CACHE="+filepath.Join(tmp, "polls"), "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME")),
		dir, "--scheduler", "slurm", "--interval", "1s")

	// States change as the cells run: the short cells first seen live,
	// later COMPLETED.
	first := v.waitFor("w", "the first poll", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, "kvsweep watch · 1 sweep · 3 cells:") && rowState(s, short[0].ID) != ""
	})
	for _, sc := range short {
		if st := rowState(first, sc.ID); scheduler.Terminal(st) {
			t.Fatalf("cell %s already %s at the first screen:\n%s", sc.Name, st, first)
		}
	}

	// Select the long cell; its log tail follows.
	for range at {
		v.keys("w", "j")
	}
	title := "── cell " + long.Name + " (" + long.ID + ")"
	v.waitFor("w", "the long cell selected, its log tail at tick 3", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, title) && strings.Contains(s, "tick 3 of 400")
	})
	v.waitFor("w", "the log tail following to tick 6", time.Minute, func(s string) bool {
		return strings.Contains(s, "tick 6 of 400")
	})

	// c asks; y cancels that one cell.
	v.keys("w", "c")
	v.waitFor("w", "the question", time.Minute, func(s string) bool {
		return strings.Contains(s, "cancel cell "+long.Name+" ("+long.ID+", job ") && strings.Contains(s, ", RUNNING)? y/n")
	})
	if st := rowState(v.screen("w"), long.ID); st != scheduler.StateRunning {
		t.Fatalf("the long cell is %q while the question waits, want RUNNING", st)
	}
	v.keys("w", "y")
	v.waitFor("w", "the cancel said", time.Minute, func(s string) bool {
		return strings.Contains(s, "cancelled 1 task(s) of cell "+long.ID)
	})
	final := v.waitFor("w", "the long cell CANCELLED, the others COMPLETED", 3*time.Minute, func(s string) bool {
		return rowState(s, long.ID) == scheduler.StateCancelled && rowState(s, short[0].ID) == scheduler.StateCompleted &&
			rowState(s, short[1].ID) == scheduler.StateCompleted
	})
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		want := scheduler.StateCompleted
		if cs.ID == long.ID {
			want = scheduler.StateCancelled
		}
		if cs.State != want {
			t.Errorf("cell %s is %s, want %s", cs.Name, cs.State, want)
		}
	}
	golden.Check(t, "testdata/watch-final.golden", []byte(normalScreen(final, m)))

	// r on the cancelled cell asks, and y submits it again: its second
	// attempt runs.
	v.keys("w", "r")
	v.waitFor("w", "the resubmit question", time.Minute, func(s string) bool {
		return strings.Contains(s, "resubmit cell "+long.Name+" ("+long.ID+", job ") && strings.Contains(s, ", CANCELLED)? y/n")
	})
	v.keys("w", "y")
	v.waitFor("w", "the resubmission said and running", 2*time.Minute, func(s string) bool {
		st := rowState(s, long.ID)
		return strings.Contains(s, "submitted 1 cells of sweep "+m.SweepID) && (st == scheduler.StatePending || st == scheduler.StateRunning)
	})

	// q quits and leaves the sweep's records as they were.
	before := records(t, dir)
	v.keys("w", "q")
	v.waitFor("w", "the view gone", time.Minute, func(s string) bool { return strings.HasPrefix(s, "(no pane") })
	if after := records(t, dir); after != before {
		t.Errorf("quitting changed the sweep's records:\nbefore %s\nafter %s", before, after)
	}
}

// records is the sweep's journal and observed states, as bytes.
func records(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, name := range []string{"state.jsonl", "observed.json"} {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		b.Write(data)
	}
	return b.String()
}

// normalScreen is the screen's counts line and each cell's id, name and
// state, the cells' ids and names numbered in the manifest's order.
func normalScreen(s string, m *sweep.Manifest) string {
	lines := strings.Split(s, "\n")
	out := []string{lines[0]}
	for i, cell := range m.Cells {
		out = append(out, fmt.Sprintf("cell%d n=%s %s", i, cell.Params["n"], rowState(s, cell.ID)))
	}
	return strings.Join(out, "\n") + "\n"
}

// Twenty views of twenty sweeps, each its own kvsweep watch process in
// tmux, share their polls: once every view shows its sweep, the real
// sacct and squeue calls (counted by a wrapper on the views' PATH) stay
// at one each per interval, 2 in all, for the twenty together; sdiag's
// counts of the controller's RPCs over the same span
// are logged beside them: squeue is the views' one call to the
// controller, two RPCs (REQUEST_JOB_INFO and REQUEST_PARTITION_INFO, as
// sdiag counts one squeue on Slurm 22.05; sacct asks slurmdbd), and the
// controller's counts are of every client (other tests share the
// cluster), so the bound holds the calls.
func TestWatchSharedPolls(t *testing.T) {
	c := clusters(t)[0]
	const n, interval, span = 20, 2 * time.Second, 20 * time.Second
	// Not t.TempDir: a poll's sacct or squeue started as its view ended
	// may still write here while the directory is removed; the removal
	// tries again until it is done.
	tmp, err := os.MkdirTemp("", "watch-polls-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for end := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if err := os.RemoveAll(tmp); err == nil || time.Now().After(end) {
				if err != nil {
					t.Errorf("removing %s: %v", tmp, err)
				}
				return
			}
		}
	})
	log := filepath.Join(tmp, "calls.log")
	wrap := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(wrap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"sacct", "squeue"} {
		real, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $(date +%%s.%%N)\" >> %s\nexec %s \"$@\"\n", tool, log, real)
		if err := os.WriteFile(filepath.Join(wrap, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v := newViews(t)
	env := append(c.env(), "KVSWEEP_POLL_CACHE="+filepath.Join(tmp, "polls"), "PATH="+wrap+":"+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"))
	for i := range n {
		dir, _ := renderSweep(t, c, fmt.Sprintf("watch%02d", i), []string{"sleep:50"}, []string{"a"}, "")
		t.Cleanup(func() { cancelSweep(t, c, dir) })
		mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
		v.open(fmt.Sprintf("v%02d", i), env, dir, "--scheduler", "slurm", "--interval", interval.String())
	}
	for i := range n {
		v.waitFor(fmt.Sprintf("v%02d", i), "the view's first poll", 3*time.Minute, func(s string) bool {
			return strings.Contains(s, "kvsweep watch · 1 sweep · 1 cells:")
		})
	}
	// Every view polled once: from here on each asks every interval.
	rpc0 := controllerRPCs(t, c)
	start := float64(time.Now().UnixNano()) / 1e9
	time.Sleep(span)
	end := float64(time.Now().UnixNano()) / 1e9
	rpc1 := controllerRPCs(t, c)
	calls := map[string]int{}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		tool, at, _ := strings.Cut(strings.TrimSpace(line), " ")
		var s float64
		if _, err := fmt.Sscan(at, &s); err == nil && s >= start && s < end {
			calls[tool]++
		}
	}
	intervals := int((end - start) / interval.Seconds())
	t.Logf("%d views over %.1f s (%d intervals of %s): %d sacct (slurmdbd), %d squeue; sdiag, every client of the controller: %d REQUEST_JOB_INFO (squeue's), %d REQUEST_PARTITION_INFO, %d REQUEST_JOB_INFO_SINGLE",
		n, end-start, intervals, interval, calls["sacct"], calls["squeue"], rpc1["REQUEST_JOB_INFO"]-rpc0["REQUEST_JOB_INFO"],
		rpc1["REQUEST_PARTITION_INFO"]-rpc0["REQUEST_PARTITION_INFO"], rpc1["REQUEST_JOB_INFO_SINGLE"]-rpc0["REQUEST_JOB_INFO_SINGLE"])
	// One poll per interval, and one more where the span cuts one.
	if calls["squeue"] > intervals+1 || calls["sacct"] > intervals+1 {
		t.Errorf("%d sacct and %d squeue calls in %d intervals for %d views: over one each per interval (unshared: %d each)",
			calls["sacct"], calls["squeue"], intervals, n, n*intervals)
	}
	if calls["squeue"] == 0 {
		t.Error("no squeue call in the span: the views stopped polling")
	}
	for i := range n {
		if s := v.screen(fmt.Sprintf("v%02d", i)); !strings.Contains(s, "kvsweep watch · 1 sweep · 1 cells:") {
			t.Errorf("view %d is gone:\n%s", i, s)
		}
	}
}

var rpcCount = regexp.MustCompile(`(?m)^\s*(REQUEST_\w+)\s+\(\s*\d+\)\s+count:(\d+)`)

// controllerRPCs is the controller's count of each RPC (sdiag), of
// every client.
func controllerRPCs(t *testing.T, c cluster) map[string]int {
	t.Helper()
	cmd := exec.Command("sdiag")
	cmd.Env = append(os.Environ(), c.env()...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sdiag: %v", err)
	}
	counts := map[string]int{}
	for _, m := range rpcCount.FindAllStringSubmatch(string(out), -1) {
		var k int
		if _, err := fmt.Sscan(m[2], &k); err == nil {
			counts[m[1]] = k
		}
	}
	return counts
}
