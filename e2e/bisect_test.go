package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/bisect"
	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
)

// The bisect fixture: a KVCR repository of 41 commits (c0 the good one,
// c40 the bad one) whose behaviour file makes TC-06 FAIL from c23 on and
// ttft_ms 130 instead of 100 from c12 on; c20's image breaks the
// container's shell (its jobs fail before the harness: infra, every
// time), c30 does not build (kvcr.txt is missing).
const (
	bisectCommits = 41
	firstFail     = 23
	firstSlow     = 12
	infraCommit   = 20
	brokenCommit  = 30
)

type bisectFixture struct {
	spec, kvcr string
	// local is the same sweep on the local executor, in docker; its
	// bisects take localArgs.
	local     string
	localArgs []string
	shas      []string
	args      []string // the flags every bisect of the fixture takes
	env       []string
}

func newBisectFixture(t *testing.T) *bisectFixture {
	t.Helper()
	conf := os.Getenv("KVSWEEP_SLURM_TWONODE")
	reg, addr, nodes := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR"), os.Getenv("KVSWEEP_REGISTRY_NODES")
	if conf == "" || reg == "" || addr == "" || nodes == "" || os.Getenv("KVSWEEP_PYXIS_SO") == "" {
		t.Fatal("the two-node cluster, the registry, buildkitd and pyxis are not set up: the README's test command starts them")
	}
	git := imagetest.StartGitServer(t)
	t.Cleanup(git.Stop)
	dynamo := git.Repo(t, "dynamo", map[string]string{"dynamo.txt": "dynamo 1\n"})
	adapter := git.Repo(t, "adapter", map[string]string{"adapter.txt": "adapter 1\n"})
	tmp := t.TempDir()
	f := &bisectFixture{kvcr: filepath.Join(tmp, "kvcr")}
	f.shas = kvcrHistory(t, f.kvcr)
	base := imagetest.PushBase(t, reg+"/e2e/busybox:1", "")
	df, _ := filepath.Abs("testdata/Dockerfile.bisect")
	pins := filepath.Join(tmp, "pins.yaml")
	writeFile(t, pins, fmt.Sprintf("version: 1\nbase: %s\ndynamo: {repo: %s/dynamo.git, ref: %s}\nvllm_adapter: {repo: %s/adapter.git, ref: %s}\nkvcr: {path: %s}\nbuild_args: {NCCL_VERSION: \"2.27.3\"}\ndockerfile: %s\n",
		base, git.URL, dynamo[0], git.URL, adapter[0], f.kvcr, df))
	image := reg + "/e2e/bisect:unused" // each probe runs its own
	f.spec = fixtureSpec(t, tmp, fmt.Sprintf("name: bisect-fixture\ncontainer: {runtime: pyxis, image: %q, pins: %s}\n", image, pins))
	f.local = fixtureSpec(t, filepath.Join(tmp, "local"), fmt.Sprintf("name: bisect-fixture-local\nscheduler: local\ncontainer: {runtime: docker, image: %q, pins: %s}\n", image, pins))
	f.localArgs = []string{"--component", "kvcr", "--push", reg + "/e2e/bisect", "--insecure-registry", "--buildkit-addr", addr}
	f.args = []string{"--component", "kvcr", "--push", reg + "/e2e/bisect", "--pull-registry", strings.Split(nodes, "/")[0],
		"--insecure-registry", "--media-types", "docker", "--buildkit-addr", addr, "--scheduler", "slurm", "--interval", "1s"}
	f.env = []string{"SLURM_CONF=" + conf}
	return f
}

// fixtureSpec writes, in dir, the fixture's spec with head (its name,
// scheduler and container) and the cells every bisect of it runs: TC-01
// and TC-06 on the aggregated topology, the harness the image carries.
func fixtureSpec(t *testing.T, dir, head string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return writeSpec(t, dir, "version: 1\n"+head+`harness:
  command: [/opt/kvcr/bisect-sim.sh, --results-dir, "{{.CellDir}}"]
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 5m}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01, TC-06]}
`)
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// kvcrHistory makes the fixture's KVCR repository and returns its
// commits, oldest first.
func kvcrHistory(t *testing.T, dir string) []string {
	t.Helper()
	sim, err := os.ReadFile("testdata/bisect-sim.sh")
	if err != nil {
		t.Fatal(err)
	}
	// bash and the C libraries it links, for the pods of scheduler k8s
	// (they run the job script in the image, as the quick-start image
	// can): the base image is busybox alone.
	sysroot := map[string][]byte{}
	for src, dst := range map[string]string{"/bin/bash": "sysroot/bin/bash",
		"/lib/x86_64-linux-gnu/libtinfo.so.6": "sysroot/lib/x86_64-linux-gnu/libtinfo.so.6",
		"/lib/x86_64-linux-gnu/libc.so.6":     "sysroot/lib/x86_64-linux-gnu/libc.so.6",
		"/lib64/ld-linux-x86-64.so.2":         "sysroot/lib64/ld-linux-x86-64.so.2"} {
		if sysroot[dst], err = os.ReadFile(src); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Kay Vee", "GIT_AUTHOR_EMAIL=kay@example.com", "GIT_COMMITTER_NAME=Kay Vee", "GIT_COMMITTER_EMAIL=kay@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	put := func(name, s string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	var shas []string
	for i := range bisectCommits {
		behaviour, subject := "", fmt.Sprintf("change %d", i)
		if i >= firstSlow {
			behaviour += "ttft_ms 130\n"
		}
		if i >= firstFail {
			behaviour += "TC-06 FAIL\n"
		}
		switch i {
		case firstSlow:
			subject = "a slower prefill path"
		case firstFail:
			subject = "TC-06 breaks"
		}
		_ = os.RemoveAll(filepath.Join(dir, "sysroot"))
		_ = os.Remove(filepath.Join(dir, "kvcr.txt"))
		put("bisect-sim.sh", string(sim), 0o755)
		put("behaviour", behaviour, 0o644)
		for name, b := range sysroot {
			put(name, string(b), 0o755)
		}
		put("counter", fmt.Sprint(i), 0o644)
		if i != brokenCommit {
			put("kvcr.txt", "kvcr\n", 0o644)
		}
		if i == infraCommit {
			put("sysroot/bin/sh", "not a shell\n", 0o644)
		}
		git("add", "-A")
		git("commit", "-q", "-m", subject)
		shas = append(shas, git("rev-parse", "HEAD"))
	}
	return shas
}

// bisectRun runs kvsweep bisect on the fixture.
func (f *bisectFixture) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return kvsweep(t, cluster{}, f.env, append(append([]string{"bisect", f.spec}, f.args...), args...)...)
}

func readAnswer(t *testing.T, dir string) *bisect.Answer {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "answer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var a bisect.Answer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

// kvsweep bisect on the real two-node Slurm cluster, buildkitd and
// registry, under pyxis. With K=1 it names the commit that made TC-06
// fail in at most ceil(log2 40) + 2 rounds, skipping a commit whose jobs
// fail outside the test (after a retry on the other node) and one that
// does not build, and says so. With K=3, killed (SIGKILL) mid-probe and
// started again, it gives the same answer in fewer rounds, and its
// journal and its probes' sweeps show no image built twice and no job
// submitted twice. A bisect whose good commit is bad stops and says so;
// a metric bisect on the local executor with docker finds the commit
// that made ttft_ms 30% worse.
func TestBisect(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the two-node Slurm cluster, buildkitd, the registry and pyxis (not with -short)")
	}
	f := newBisectFixture(t)
	tmp := t.TempDir()
	store := filepath.Join(tmp, "history.db")
	stack(t, f, tmp, store)

	one := filepath.Join(tmp, "k1")
	out, errs, err := f.run(t, "--good", f.shas[0], "--bad", f.shas[40], "--out", one, "--store", store)
	if err != nil {
		t.Fatalf("bisect K=1: %v\n%s%s", err, out, errs)
	}
	a1 := readAnswer(t, one)
	if a1.FirstBad == nil || a1.FirstBad.SHA != f.shas[firstFail] || !strings.Contains(out, "first bad commit: "+f.shas[firstFail][:12]+" TC-06 breaks (Kay Vee <kay@example.com>)") {
		t.Fatalf("bisect K=1 answered:\n%s%s", out, errs)
	}
	if a1.Rounds > 8 { // ceil(log2 40) + 2
		t.Errorf("K=1 took %d rounds, want at most 8", a1.Rounds)
	}
	skipped := map[string]string{}
	for _, s := range a1.Skipped {
		skipped[s.Commit.SHA] = s.Reason
	}
	if r := skipped[f.shas[infraCommit]]; !strings.Contains(r, "failed outside the test after a retry") {
		t.Errorf("the infra commit: %q\n%s%s", r, out, errs)
	}
	if r := skipped[f.shas[brokenCommit]]; !strings.HasPrefix(r, "does not build") {
		t.Errorf("the commit that does not build: %q", r)
	}
	if !strings.Contains(errs, "failed outside the test") || !strings.Contains(errs, "submitting it again away from") {
		t.Errorf("no infra retry said:\n%s", errs)
	}
	if !strings.Contains(out, "## ") || !strings.Contains(out, "TC-06") {
		t.Errorf("no comparison of the last good and first bad probes:\n%s", out)
	}
	t.Logf("K=1: %d probes in %d rounds; the bisect said:\n%s%s", a1.Probes, a1.Rounds, errs, out)

	three := filepath.Join(tmp, "k3")
	bisectKilled(t, f, three, store)
	a3 := readAnswer(t, three)
	if a3.FirstBad == nil || a3.FirstBad.SHA != f.shas[firstFail] {
		t.Fatalf("K=3 after a kill: %+v", a3)
	}
	if a3.Rounds >= a1.Rounds {
		t.Errorf("K=3 took %d rounds, K=1 %d", a3.Rounds, a1.Rounds)
	}
	t.Logf("K=3: %d probes in %d rounds", a3.Probes, a3.Rounds)
	noDuplicates(t, one, three)

	// A good commit that is bad: the premise is refused. The probes run
	// on Kubernetes, their sweeps on the volume the pods mount.
	k := kubeTestCluster(t)
	kdir := k.sweepDir(t, "bisect")
	kspec := fixtureSpec(t, kdir, fmt.Sprintf("name: bisect-fixture-k8s\nscheduler: k8s\nkubernetes: {volume: {host_path: %s}}\ncontainer: {image: %q, pins: %s}\n",
		k.sweeps, os.Getenv("KVSWEEP_REGISTRY")+"/e2e/bisect:unused", filepath.Join(filepath.Dir(f.spec), "pins.yaml")))
	out, errs, err = kvsweep(t, cluster{}, nil, append(append([]string{"bisect", kspec}, f.localArgs...),
		"--good", f.shas[25], "--bad", f.shas[40], "--out", filepath.Join(kdir, "premise"), "--store", store, "--interval", "1s")...)
	if err == nil || !strings.Contains(errs, "the good commit "+f.shas[25][:12]+" is in fact bad") || !strings.Contains(out+errs, "submitted 1 cells of sweep") {
		t.Errorf("a wrong premise, on Kubernetes: %v\n%s%s", err, out, errs)
	}

	// The metric: ttft_ms 30% worse from c12 on, on the local executor
	// in docker.
	metric := filepath.Join(tmp, "metric")
	out, errs, err = kvsweep(t, cluster{}, nil, append(append([]string{"bisect", f.local}, f.localArgs...),
		"--good", f.shas[0], "--bad", f.shas[19], "--metric", "ttft_ms", "--threshold", "10%", "--parallel", "2", "--out", metric, "--store", store)...)
	if err != nil {
		t.Fatalf("metric bisect: %v\n%s%s", err, out, errs)
	}
	if a := readAnswer(t, metric); a.FirstBad == nil || a.FirstBad.SHA != f.shas[firstSlow] {
		t.Errorf("metric bisect answered:\n%s%s", out, errs)
	}
}

// stack runs a 3-PR stack as one sweep (kvsweep run --revisions): pr-1
// at c21, pr-2 at c23 (TC-06 breaks), pr-3 at c24. The report's
// revisions x cases table names pr-2 the first failing; run again, it
// builds and submits nothing.
func stack(t *testing.T, f *bisectFixture, tmp, store string) {
	t.Helper()
	reg, nodes := os.Getenv("KVSWEEP_REGISTRY"), strings.Split(os.Getenv("KVSWEEP_REGISTRY_NODES"), "/")[0]
	file := filepath.Join(tmp, "stack.yaml")
	writeFile(t, file, fmt.Sprintf(`version: 1
push: %s/e2e/stack
pull_registry: %s
media_types: docker
buildkit_addr: %s
revisions:
  - {name: pr-1, refs: {kvcr: %s}}
  - {name: pr-2, refs: {kvcr: %s}}
  - {name: pr-3, refs: {kvcr: %s}}
`, reg, nodes, os.Getenv("KVSWEEP_BUILDKIT_ADDR"), f.shas[21], f.shas[firstFail], f.shas[24]))
	dir := filepath.Join(tmp, "stack")
	args := []string{"run", f.spec, "--revisions", file, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s", "--insecure-registry", "--store", store}
	out, errs, err := kvsweep(t, cluster{}, f.env, args...)
	if !strings.Contains(errs, "kvsweep: revision pr-3: ") {
		t.Fatalf("the stack: %v\n%s%s", err, out, errs)
	}
	t.Logf("the stack's builds:\n%s", grepLines(errs, "kvsweep: revision "))
	if _, err := os.Stat(filepath.Join(dir, "state.jsonl")); err != nil {
		t.Fatalf("the stack was not submitted: %v\n%s%s", err, out, errs)
	}
	_, _, _ = kvsweep(t, cluster{}, f.env, "collect", dir, "--store", store)
	report, rerrs, _ := kvsweep(t, cluster{}, f.env, "report", dir, "--format", "markdown")
	t.Logf("the stack's report:\n%s%s", report, rerrs)
	for _, want := range []string{"| **pr-2 (first failing)** | PASS  | FAIL  |", "| pr-1                     | PASS  | PASS  |", "First failing revision: pr-2 (of 3, in the order given)."} {
		if !strings.Contains(report, want) {
			t.Errorf("the stack's report lacks %q:\n%s", want, report)
		}
	}
	before := submissions(t, dir)
	_, errs, _ = kvsweep(t, cluster{}, f.env, args...)
	if strings.Contains(errs, ": built ") || submissions(t, dir) != before || before == 0 {
		t.Errorf("run again, the stack built or submitted (%d submissions before):\n%s", before, errs)
	}
}

// submissions counts the submissions a sweep's journal records.
func submissions(t *testing.T, dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "state.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `"type":"submitted"`)
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// bisectKilled runs the K=3 bisect, kills it (SIGKILL) once a probe
// between the ends has submitted its sweep, and runs it again to the end.
func bisectKilled(t *testing.T, f *bisectFixture, dir, store string) {
	t.Helper()
	args := append(append([]string{"bisect", f.spec}, f.args...), "--good", f.shas[0], "--bad", f.shas[40], "--parallel", "3", "--out", dir, "--store", store)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), f.env...)
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for killed := false; !killed; {
		select {
		case err := <-done:
			t.Fatalf("the K=3 bisect ended (%v) before it could be killed:\n%s", err, log.String())
		case <-time.After(200 * time.Millisecond):
		}
		events, _ := bisect.ReadJournal(dir)
		for _, e := range events {
			if e.Event == "submit" && e.Commit != f.shas[0] && e.Commit != f.shas[40] {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-done
				killed = true
				break
			}
		}
	}
	out, errs, err := kvsweep(t, cluster{}, f.env, args...)
	if err != nil {
		t.Fatalf("the K=3 bisect started again: %v\n%s%s\nbefore the kill:\n%s", err, out, errs, log.String())
	}
}

// noDuplicates checks the bisects' journals and probe sweeps: no image
// built twice, no job submitted twice.
func noDuplicates(t *testing.T, dirs ...string) {
	t.Helper()
	built := map[string]int{}
	for _, dir := range dirs {
		events, err := bisect.ReadJournal(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Event == "built" {
				built[e.Commit]++
			}
		}
		journals, _ := filepath.Glob(filepath.Join(dir, bisect.ProbesDir, "*", "sweep", "state.jsonl"))
		if len(journals) == 0 {
			t.Errorf("%s: no probe sweeps", dir)
		}
		for _, j := range journals {
			b, err := os.ReadFile(j)
			if err != nil {
				t.Fatal(err)
			}
			submitted := map[string]int{}
			for _, line := range strings.Split(string(b), "\n") {
				var r struct {
					Type string `json:"type"`
					Seq  int    `json:"seq"`
				}
				if json.Unmarshal([]byte(line), &r) == nil && r.Type == "submitted" {
					submitted[fmt.Sprint(r.Seq)]++
				}
			}
			for seq, n := range submitted {
				if n > 1 {
					t.Errorf("%s: submission %s recorded %d times", j, seq, n)
				}
			}
			if len(submitted) > 2 {
				t.Errorf("%s: %d submissions (one, and one infra retry at most)", j, len(submitted))
			}
		}
	}
	for sha, n := range built {
		if n > 1 {
			t.Errorf("the image of %s was built %d times", sha[:12], n)
		}
	}
}
