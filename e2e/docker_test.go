package e2e

import (
	"bytes"
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

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// The seed's docker host runner: the local executor runs cells in the
// image kvsweep image build made, under Debian's docker. One cell
// completes in its container; the other, cancelled while it runs, leaves
// no container behind. (This machine has no GPU, so no task asks for one:
// the --gpus argv is TestDockerGPUsUnderSlurm's.)
func TestDockerHostRunner(t *testing.T) {
	c := clusters(t)[0] // the registry the test image is pushed to comes with the clusters
	ref, digest, _ := buildTestImage(t, c)
	t.Parallel()
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: dockerhost
scheduler: local
container: {runtime: docker, image: %q}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}", --wait-file, "{{.Params.wait}}"]
topologies: {aggregated: {resources: {cpus_per_task: 1, time: 10m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], wait: [/opt/kvcr, /never]}
`, ref+"@"+digest)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	id := fmt.Sprintf("dockerhost-%d", time.Now().UnixNano()%1e9)
	mustKvsweep(t, c, "render", path, "--out", dir, "--sweep-id", id, "--insecure-registry")
	run := exec.Command(binary, "submit", dir, "--scheduler", "local")
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	defer func() { _ = run.Process.Kill() }()
	names := func() string {
		b, _ := exec.Command("docker", "ps", "-a", "--filter", "name=kvsweep-"+id, "--format", "{{.Names}} {{.Status}}").CombinedOutput()
		return strings.TrimSpace(string(b))
	}
	m, _ := sweep.ReadManifest(dir)
	var victim, passing string
	for _, cell := range m.Cells {
		if cell.Params["wait"] == "/never" {
			victim = cell.ID
		} else {
			passing = cell.ID
		}
	}
	// The victim's harness runs in its container; the other cell is done.
	deadline := time.Now().Add(5 * time.Minute)
	for !(strings.Contains(names(), "kvsweep-"+id+"-"+victim+"-") && sweep.IsFile(dir, "cells/"+victim+"/"+sweep.StartedFile) &&
		sweep.IsFile(dir, "cells/"+passing+"/"+sweep.ResultFile)) {
		if time.Now().After(deadline) {
			t.Fatalf("the cells did not reach their containers: %q\n%s", names(), out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustKvsweep(t, c, "cancel", dir, "--scheduler", "local", "--cells", victim)
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the local executor did not end after the cancel:\n%s", out.String())
	}
	if left := names(); left != "" {
		t.Errorf("containers of the sweep outlived their tasks:\n%s", left)
	}
	cells, _, err := scheduler.Status(t.Context(), dir, local.New(local.Config{Dir: dir}))
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cells {
		want := scheduler.StateCompleted
		if cs.ID == victim {
			want = scheduler.StateCancelled
		}
		if cs.State != want {
			t.Errorf("%s: %s, want %s\n%s", cs.Name, cs.State, want, cellLog(dir, cs))
		}
	}
	// Collect exits 1: the cancelled cell has no result.
	_, _, _ = kvsweep(t, c, nil, "collect", dir, "--no-store", "--scheduler", "local")
	run2, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range run2.Cells {
		if cell.CellID == passing && (cell.Outcome != testrun.OK || cell.Image.Digest != digest || cell.Image.SourceRevisions == nil) {
			t.Errorf("the completed cell: %s %s, image %q", cell.Outcome, cell.Detail, cell.Image.Digest)
		}
	}
}

// idxRE reads the GPU indices Slurm allocated from scontrol show job -d:
// "GRES=gpu:2(IDX:0-1)" or "gpu(IDX:1,3)".
var idxRE = regexp.MustCompile(`IDX:([0-9,-]+)\)`)

func expandIdx(s string) string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			out = append(out, lo)
			continue
		}
		a, _ := strconv.Atoi(lo)
		b, _ := strconv.Atoi(hi)
		for i := a; i <= b; i++ {
			out = append(out, strconv.Itoa(i))
		}
	}
	return strings.Join(out, ",")
}

// Under Slurm a docker container escapes the job's cgroup, so the job must
// hand docker exactly the GPUs Slurm allocated it. The test clusters
// advertise four GPUs through GRES; each of three 2-GPU jobs runs docker
// (a stand-in on PATH that records its argv: there is no GPU to give a
// real container here), and its --gpus is the job's own allocation as
// scontrol reports it.
func TestDockerGPUsUnderSlurm(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, _ := buildTestImage(t, c)
	t.Parallel()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	shim := `#!/bin/sh
# docker stand-in: records a run's argv in the cell directory and holds the
# job (at most two minutes) until the test has read Slurm's allocation; ps
# lists nothing.
if [ "$1" = run ]; then
	printf '%s\n' "$@" >"$KVSWEEP_CELL_DIR/docker-argv.tmp"
	mv "$KVSWEEP_CELL_DIR/docker-argv.tmp" "$KVSWEEP_CELL_DIR/docker-argv"
	i=0
	while [ ! -e "$KVSWEEP_CELL_DIR/release" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
fi
exit 0
`
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`version: 1
name: dockergpus
container: {runtime: docker, image: %q}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --results-dir, "{{.CellDir}}"]
topologies: {aggregated: {resources: {gpus_per_node: 2, cpus_per_task: 1, mem: 100M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], n: ["1", "2", "3"]}
`, ref+"@"+digest)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	defer cancelSweep(t, c, dir)
	mustKvsweep(t, c, "render", path, "--out", dir, "--insecure-registry")
	if _, errs, err := kvsweep(t, c, []string{"PATH=" + bin + ":" + os.Getenv("PATH")}, "submit", dir, "--scheduler", "slurm"); err != nil {
		t.Fatalf("submit: %v\n%s", err, errs)
	}
	// Each job, while it runs: its docker argv against what Slurm says it
	// allocated (scontrol show job -d), then let it end.
	checked := map[string]bool{}
	waitFor(t, c, dir, 5*time.Minute, "every job ran docker with its own GPUs", func(cells []scheduler.CellStatus) bool {
		for _, cs := range cells {
			argvFile := filepath.Join(dir, sweep.CellsDir, cs.ID, "docker-argv")
			if checked[cs.ID] || cs.State != scheduler.StateRunning || !sweep.IsFile(dir, "cells/"+cs.ID+"/docker-argv") {
				continue
			}
			argv, _ := os.ReadFile(argvFile)
			cmd := exec.Command("scontrol", "show", "job", "-d", cs.Task)
			cmd.Env = append(os.Environ(), c.env()...)
			show, err := cmd.CombinedOutput()
			m := idxRE.FindStringSubmatch(string(show))
			if err != nil || m == nil {
				t.Fatalf("%s: scontrol show job -d %s: %v\n%s", cs.Name, cs.Task, err, show)
			}
			want := "--gpus\n\"device=" + expandIdx(m[1]) + "\"\n"
			if !strings.Contains(string(argv), want) || strings.Count(expandIdx(m[1]), ",") != 1 {
				t.Errorf("%s: Slurm allocated GPUs %s; docker was run with:\n%s", cs.Name, m[1], argv)
			}
			checked[cs.ID] = true
			if err := os.WriteFile(filepath.Join(dir, sweep.CellsDir, cs.ID, "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return len(checked) == len(cells)
	})
	waitFor(t, c, dir, 3*time.Minute, "every cell ends", scheduler.Done)
}

// container.user: the harness runs as the user the spec names, so what
// a cell writes into the shared sweep directory is that user's, not
// root's (the directory is made writable for it, as a site makes the
// sweep directory the runtime user's).
func TestDockerRunsAsUser(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, _ := buildTestImage(t, c)
	t.Parallel()
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: dockeruser
scheduler: local
container: {runtime: docker, image: %q, user: "4321:4322"}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies: {aggregated: {resources: {cpus_per_task: 1, time: 10m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, ref+"@"+digest)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	mustKvsweep(t, c, "render", path, "--out", dir, "--insecure-registry")
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	cellDir := filepath.Join(dir, sweep.CellsDir, m.Cells[0].ID)
	if err := os.MkdirAll(cellDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cellDir, 0o777); err != nil {
		t.Fatal(err)
	}
	out, errs, err := kvsweep(t, c, nil, "submit", dir, "--scheduler", "local")
	if err != nil {
		t.Fatalf("submit: %v\n%s%s\n%s", err, out, errs, cellLog(dir, scheduler.CellStatus{ID: m.Cells[0].ID}))
	}
	fi, err := os.Stat(filepath.Join(cellDir, sweep.ResultFile))
	if err != nil {
		t.Fatalf("no result: %v\n%s", err, cellLog(dir, scheduler.CellStatus{ID: m.Cells[0].ID}))
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 4321 || st.Gid != 4322 {
		t.Errorf("result.json belongs to %d:%d, want 4321:4322 (container.user)", st.Uid, st.Gid)
	}
}

// A docker task killed with SIGKILL (a node that died) runs no exit
// trap: its container lives on. The next kvsweep status (or collect)
// finds it by the sweep's labels, removes it, and says so.
func TestDockerLeftoversRemoved(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, _ := buildTestImage(t, c)
	for _, by := range []string{"status", "collect"} {
		t.Run(by, func(t *testing.T) {
			tmp := t.TempDir()
			spec := fmt.Sprintf(`version: 1
name: leftover
container: {runtime: docker, image: %q}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --results-dir, "{{.CellDir}}", --wait-file, /never]
topologies: {aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, ref+"@"+digest)
			path := writeSpec(t, tmp, spec)
			dir := filepath.Join(tmp, "sweep")
			id := fmt.Sprintf("left-%s-%d", by, time.Now().UnixNano()%1e9)
			t.Cleanup(func() { cancelSweep(t, c, dir) })
			mustKvsweep(t, c, "run", path, "--out", dir, "--sweep-id", id, "--scheduler", "slurm", "--insecure-registry")
			containers := func() string {
				b, _ := exec.Command("docker", "ps", "-a", "-q", "--filter", "label=kvsweep.sweep="+id).CombinedOutput()
				return strings.TrimSpace(string(b))
			}
			var task string
			for end := time.Now().Add(5 * time.Minute); containers() == "" || task == ""; time.Sleep(200 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("the harness's container never started:\n%s", cellLog(dir, scheduler.CellStatus{}))
				}
				if cs, _, err := scheduler.Status(t.Context(), dir, c.slurm()); err == nil && len(cs) == 1 {
					task = cs[0].Task
				}
			}
			// The node dies: the job script gets KILL, no trap runs.
			scancel := exec.Command("scancel", "--signal=KILL", "--full", task)
			scancel.Env = append(os.Environ(), c.env()...)
			if out, err := scancel.CombinedOutput(); err != nil {
				t.Fatalf("scancel: %v %s", err, out)
			}
			for end := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
				cs, _, err := scheduler.Status(t.Context(), dir, c.slurm())
				if err == nil && len(cs) == 1 && scheduler.Terminal(cs[0].State) {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("the killed job never ended: %v %+v", err, cs)
				}
			}
			if containers() == "" {
				t.Fatal("the killed task left no container: nothing to test")
			}
			args := []string{by, dir, "--scheduler", "slurm"}
			if by == "collect" {
				args = append(args, "--store", filepath.Join(tmp, "history.db"))
			}
			_, errs, _ := kvsweep(t, c, nil, args...)
			if !strings.Contains(errs, "kvsweep: removed 1 container(s) that killed tasks of the sweep left: kvsweep-"+id) {
				t.Errorf("kvsweep %s did not say it removed the leftover:\n%s", by, errs)
			}
			if left := containers(); left != "" {
				t.Errorf("kvsweep %s left the container %s", by, left)
			}
		})
	}
}
