package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/testrun"

	"github.com/kvsweep/kvsweep/internal/testing/etcdtest"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// A two-node cell on two real slurmd nodes in network namespaces of their
// own: etcd runs on the head node, the second node meets the head at the
// barrier through it and starts the node agent, and the harness completes.
func TestTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the two-node Slurm cluster of scripts/slurm-env.sh (not with -short)")
	}
	conf := os.Getenv("KVSWEEP_SLURM_TWONODE")
	if conf == "" {
		t.Fatal("KVSWEEP_SLURM_TWONODE is not set: scripts/slurm-env.sh start; eval \"$(scripts/slurm-env.sh env)\"")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatal("etcd is not installed (scripts/test.sh installs etcd-server)")
	}
	t.Parallel()
	c := cluster{name: "twonode", conf: conf}
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: twonode
container: {runtime: none}
harness:
  command: [python3, %q, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies:
  two-node:
    resources: {nodes: 2, cpus_per_task: 1, mem: 200M, time: 3m}
    args: [--etcd]
    agent: [bash, -c, 'echo "agent on $SLURMD_NODENAME at $(ip -4 -o addr show scope global | cut -d" " -f7)"; exec sleep 120']
    service: [bash, -c, 'echo "service $KVCR_SERVICE_INDEX on $SLURMD_NODENAME" > "$KVSWEEP_SERVICES_DIR/where-$KVCR_SERVICE_INDEX"; exec sleep 121']
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [two-node], geometry: [g], case: [TC-01, TC-06]}
`, harness)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	mustKvsweep(t, c, "render", path, "--out", dir)
	if fi, err := os.Stat(filepath.Join(dir, sweep.BinaryPath)); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("kvsweep was not copied into the sweep for the job: %v", err)
	}
	mustKvsweep(t, c, "submit", dir, "--scheduler", "slurm")
	defer cancelSweep(t, c, dir)
	cells := waitFor(t, c, dir, 3*time.Minute, "the two-node cell ends", scheduler.Done)
	cell := cells[0]
	cellDir := filepath.Join(dir, "cells", cell.ID)
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(cellDir, name))
		return string(b)
	}
	logs, _ := filepath.Glob(filepath.Join(cellDir, "slurm-*.out"))
	var jobLog string
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		jobLog += string(b)
	}
	if cell.State != scheduler.StateCompleted {
		t.Fatalf("cell %s: %s\njob output:\n%s\netcd:\n%s\nremote barrier:\n%s\nagent:\n%s", cell.Name, cell.State, jobLog,
			read("etcd.log"), read("remote/barrier.log"), read("remote/agent.log"))
	}
	if cell.Nodes != "kvsn[1-2]" {
		t.Errorf("ran on %q, want both nodes kvsn[1-2]", cell.Nodes)
	}
	// The head (kvsn1) ran etcd and passed the barrier; the second node
	// (kvsn2, its own address) passed it too and ran the agent.
	net := os.Getenv("KVSWEEP_TWONODE_NET") // the /24 of the two nodes, "10.213.77"
	m := regexp.MustCompile(`etcd at http://` + regexp.QuoteMeta(net+".11") + `:(\d+) is healthy`).FindStringSubmatch(jobLog)
	if m == nil || !strings.Contains(jobLog, ": head passed with 2 participants") {
		t.Fatalf("head side:\n%s", jobLog)
	}
	if !strings.Contains(read("etcd.log"), "ready to serve client requests") {
		t.Errorf("the job's own etcd did not serve:\n%s", read("etcd.log"))
	}
	// Torn down: nothing listens on the job's etcd port on the head any more.
	ss, err := exec.Command("nsenter", "--net="+os.Getenv("KVSWEEP_TWONODE_NETNS"), "ss", "-Hltn", "sport = :"+m[1]).CombinedOutput()
	if err != nil || strings.TrimSpace(string(ss)) != "" {
		t.Errorf("after the job, port %s on the head: %v %q", m[1], err, ss)
	}
	if b := read("remote/barrier.log"); !strings.Contains(b, ": remote passed with 2 participants") {
		t.Errorf("remote barrier: %q", b)
	}
	if a := read("remote/agent.log"); !strings.Contains(a, "agent on kvsn2 at "+net+".12/24") {
		t.Errorf("agent: %q", a)
	}
	// The head worker's service ran on the head, the remote worker's on the
	// second node, and none outlived the job.
	for i, node := range []string{"kvsn1", "kvsn2"} {
		if w := read(fmt.Sprintf("services/where-%d", i)); strings.TrimSpace(w) != fmt.Sprintf("service %d on %s", i, node) {
			t.Errorf("service %d: %q, want it on %s", i, w, node)
		}
	}
	waitGone(t, "exec sleep 121", "services outlived the job")
	if _, ok, _ := sweep.ReadExitMarker(dir, cell.ID); !ok {
		t.Error("no exit marker")
	}
	if !strings.Contains(read("result.json"), `"verdict": "PASS"`) {
		t.Errorf("result: %s", read("result.json"))
	}
}

// TestNodeFailRetried runs alone (it takes a node of the two-node cluster
// down): under retry: {infra: 1}, a cell whose node goes DOWN while it
// runs ends NODE_FAIL, is classified infra and submitted once more, away
// from that node; it passes on the other node and the report says it
// passed after one infra retry. A deterministic FAIL in the same sweep is
// never retried.
func TestNodeFailRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the two-node Slurm cluster of scripts/slurm-env.sh (not with -short)")
	}
	conf := os.Getenv("KVSWEEP_SLURM_TWONODE")
	if conf == "" {
		t.Fatal("KVSWEEP_SLURM_TWONODE is not set: scripts/slurm-env.sh start; eval \"$(scripts/slurm-env.sh env)\"")
	}
	c := cluster{name: "twonode", conf: conf}
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: nodefail
container: {runtime: none}
retry: {infra: 1}
harness:
  command: [python3, %q, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}", --sim, "{{.Params.sim}}"]
topologies:
  aggregated: {resources: {cpus_per_task: 1, mem: 100M, time: 3m}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], sim: ["sleep:25", "fail-case:TC-01"]}
`, harness)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	mustKvsweep(t, c, "render", path, "--out", dir)
	run := exec.Command(binary, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s")
	run.Env = append(os.Environ(), c.env()...)
	var out strings.Builder
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var runErr error
	done := make(chan struct{})
	go func() { runErr = run.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = run.Process.Kill()
		<-done
		cancelSweep(t, c, dir)
	})
	const victim, failing = "vllm-aggregated-g-sim-sleep-25", "vllm-aggregated-g-sim-fail-case-tc-01"
	// The failing cell has ended, and the victim's harness is running.
	cells := waitFor(t, c, dir, 3*time.Minute, "the victim runs its harness", func(cs []scheduler.CellStatus) bool {
		v := byName(cs)[victim]
		return scheduler.Terminal(byName(cs)[failing].State) && v.State == scheduler.StateRunning &&
			sweep.IsFile(dir, "cells/"+v.ID+"/"+sweep.StartedFile)
	})
	node := byName(cells)[victim].Nodes
	scontrol := func(args ...string) error {
		cmd := exec.Command("scontrol", args...)
		cmd.Env = append(os.Environ(), c.env()...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("scontrol %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := scontrol("update", "nodename="+node, "state=down", "reason=kvsweep-test"); err != nil {
		t.Fatal(err)
	}
	// The node's slurmd still answers, so the cluster (ReturnToService=2)
	// may take it back by itself; a resume then has nothing to do.
	t.Cleanup(func() { _ = scontrol("update", "nodename="+node, "state=resume") })
	select {
	case <-done:
		if runErr != nil {
			t.Fatalf("run --wait: %v\n%s", runErr, out.String())
		}
	case <-time.After(4 * time.Minute):
		t.Fatalf("run --wait did not end after the retry:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "cell "+victim) || !strings.Contains(out.String(), "failed outside the test (NODE_FAIL on "+node) ||
		!strings.Contains(out.String(), "away from "+node) {
		t.Errorf("run --wait did not say it retried the victim away from %s:\n%s", node, out.String())
	}
	if strings.Contains(out.String(), "cell "+failing+" (") {
		t.Errorf("the deterministic failure was retried:\n%s", out.String())
	}
	store := filepath.Join(tmp, "history.db")
	mustKvsweep(t, c, "collect", dir, "--store", store, "--scheduler", "slurm")
	rep := mustKvsweep(t, c, "report", dir, "--format", "json")
	var r testrun.Run
	if err := json.Unmarshal([]byte(rep), &r); err != nil {
		t.Fatalf("%v\n%s", err, rep)
	}
	for _, cell := range r.Cells {
		switch cell.Name {
		case victim:
			if cell.Outcome != testrun.OK || cell.Class != "" || cell.Attempts != 2 || cell.Nodes == node ||
				len(cell.Earlier) != 1 || cell.Earlier[0].State != "NODE_FAIL" || cell.Earlier[0].Class != testrun.ClassInfra || cell.Earlier[0].Nodes != node {
				t.Errorf("victim: %+v", cell)
			}
		case failing:
			if cell.Attempts != 1 || cell.Class != testrun.ClassTest {
				t.Errorf("failing cell: attempts %d class %q, want 1 and test", cell.Attempts, cell.Class)
			}
		}
	}
	md := mustKvsweep(t, c, "report", dir)
	if !strings.Contains(md, "OK (after 1 infra retry: NODE_FAIL on "+node+")") {
		t.Errorf("the report does not show the retry:\n%s", md)
	}
	// The bad-node ledger remembers the node; the next sweep can keep it out.
	ledger := mustKvsweep(t, c, "nodes", "--store", store)
	if !regexp.MustCompile(`(?m)^ ` + node + ` +\| 1 +\| NODE_FAIL x1 +\| 1 `).MatchString(ledger) {
		t.Errorf("kvsweep nodes:\n%s", ledger)
	}
	next := filepath.Join(tmp, "next")
	mustKvsweep(t, c, "render", path, "--out", next)
	dry := mustKvsweep(t, c, "submit", next, "--scheduler", "slurm", "--dry-run", "--exclude-bad-nodes", "1", "--store", store)
	if !strings.Contains(dry, "--exclude="+node) {
		t.Errorf("submit --exclude-bad-nodes 1 did not keep %s out:\n%s", node, dry)
	}
}

// Two submitters of one sweep with --lock: the second is refused, naming
// the first, while the first holds the lock.
func TestSubmitLock(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd (not with -short)")
	}
	t.Parallel()
	port := etcdtest.FreePort(t)
	etcdtest.Start(t, port)
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: lock
scheduler: local
harness: {command: [python3, %q, --results-dir, "{{.CellDir}}", --sim, "sleep:4"]}
topologies: {aggregated: {resources: {time: 1m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, harness)
	path := writeSpec(t, tmp, spec)
	dirA, dirB := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	lock := fmt.Sprintf("etcd://127.0.0.1:%d/kvsweep-ci", port)
	none := cluster{}
	mustKvsweep(t, none, "render", path, "--out", dirA, "--sweep-id", "lock-1")
	// A copy of the same sweep elsewhere (another person, another machine).
	mustKvsweep(t, none, "render", path, "--out", dirB, "--sweep-id", "lock-1")
	first := exec.Command(binary, "submit", dirA, "--lock", lock)
	var out strings.Builder
	first.Stdout, first.Stderr = &out, &out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	_, errs, err := kvsweep(t, none, nil, "submit", dirB, "--lock", lock)
	if err == nil || !strings.Contains(errs, "sweep lock-1 is locked by ") || !strings.Contains(errs, " pid ") {
		t.Errorf("second submitter: %v %q", err, errs)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first submitter: %v\n%s", err, out.String())
	}
	// Released: the second can go now.
	if _, errs, err := kvsweep(t, none, nil, "submit", dirB, "--lock", lock); err != nil {
		t.Errorf("after the first finished: %v %s", err, errs)
	}
}

// A two-node cell whose workers, services and etcd all run in the image
// kvsweep builds, under pyxis, as 2P+1D placed across the nodes (prefill
// workers 0 and 1 on the head, decode worker 2 on the second node): the
// head's etcd comes from the image, both nodes meet at the barrier, each
// worker's service runs on its node, the
// result is collected with the image's provenance, and nothing (no etcd,
// no service, no agent) outlives the job.
func TestTwoNodesInContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the two-node Slurm cluster and the runtimes (not with -short)")
	}
	conf := os.Getenv("KVSWEEP_SLURM_TWONODE")
	if conf == "" {
		t.Fatal("KVSWEEP_SLURM_TWONODE is not set: the README's test command starts the two-node cluster")
	}
	nodes := os.Getenv("KVSWEEP_REGISTRY_NODES")
	if nodes == "" {
		t.Fatal("KVSWEEP_REGISTRY_NODES is not set: scripts/buildkit-env.sh serves the registry on the two-node bridge once the cluster is up")
	}
	c := cluster{name: "twonode", conf: conf}
	ref, digest, revs := buildTestImage(t, c)
	// The nodes live in network namespaces: they pull the same image from
	// the registry's address on their bridge.
	ref = nodes + strings.TrimPrefix(ref, os.Getenv("KVSWEEP_REGISTRY"))
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: twonode-pyxis
container: {runtime: pyxis, image: %q}
services: [etcd, nats]
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies:
  two-node:
    resources: {nodes: 2, cpus_per_task: 1, mem: 200M, time: 5m}
    # The harness waits for both services and the agent, as the real one
    # waits for its services' sockets and the remote worker.
    # 2P+1D across the nodes: the prefill workers 0 and 1 on the head, the
    # decode worker 2 on the second node, each with its service there.
    placement: {head: [0, 1], remote: [2]}
    # The head's stand-in Dynamo workers 0 and 1 and the remote worker 2
    # (started by the agent on the second node) need etcd and NATS, both
    # on the head.
    args: [--etcd, --dynamo-workers, "2", --wait-file, "{{.CellDir}}/services/ready-0", --wait-file, "{{.CellDir}}/services/ready-1", --wait-file, "{{.CellDir}}/services/ready-2", --wait-file, "{{.CellDir}}/remote/agent-ready"]
    agent: [sh, -c, 'echo "agent on $(hostname) in the image: $(cat /opt/nccl-version)"; bash /opt/kvcr/dynamo-worker-sim.sh 2 && touch "$KVSWEEP_CELL_DIR/remote/agent-ready"; exec sleep 122']
    service: [sh, -c, 'echo "service $KVCR_SERVICE_INDEX on $SLURMD_NODENAME" > "$KVSWEEP_SERVICES_DIR/where-$KVCR_SERVICE_INDEX"; touch "$KVSWEEP_SERVICES_DIR/ready-$KVCR_SERVICE_INDEX"; exec sleep 123']
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [two-node], geometry: [g], case: [TC-01, TC-06]}
`, ref+"@"+digest)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	defer cancelSweep(t, c, dir)
	mustKvsweep(t, c, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s")
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	cell := cells[0]
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "cells", cell.ID, name))
		return string(b)
	}
	if cell.State != scheduler.StateCompleted {
		t.Fatalf("cell %s: %s\n%s\netcd:\n%s\nremote barrier:\n%s\nagent:\n%s", cell.Name, cell.State, cellLog(dir, cell),
			read("etcd.log"), read("remote/barrier.log"), read("remote/agent.log"))
	}
	if !strings.Contains(read("etcd.log"), "ready to serve client requests") {
		t.Errorf("the image's etcd did not serve:\n%s", read("etcd.log"))
	}
	if a := read("remote/agent.log"); !strings.Contains(a, "agent on ") || !strings.Contains(a, "in the image: nccl 2.27.3") {
		t.Errorf("the agent did not run in the image on the second node: %q", a)
	}
	// Dynamo's services on the head serve both nodes: the remote worker
	// reached them at the head's address.
	if !strings.Contains(read("nats.log"), "Server is ready") {
		t.Errorf("the image's nats-server did not serve:\n%s", read("nats.log"))
	}
	if a := read("remote/agent.log"); !regexp.MustCompile(`dynamo worker 2: registered in etcd at http://[0-9.]+:\d+, events to nats://[0-9.]+:\d+`).MatchString(a) || strings.Contains(a, "127.0.0.1") {
		t.Errorf("the remote worker did not reach the head's etcd and NATS: %q", a)
	}
	if l := cellLog(dir, cell); !strings.Contains(l, "dynamo worker 1: registered in etcd") {
		t.Errorf("the head's workers did not register:\n%s", l)
	}
	for i, node := range []string{"kvsn1", "kvsn1", "kvsn2"} {
		if w := read(fmt.Sprintf("services/where-%d", i)); strings.TrimSpace(w) != fmt.Sprintf("service %d on %s", i, node) {
			t.Errorf("service %d: %q, want it on %s", i, w, node)
		}
	}
	if script, _ := os.ReadFile(filepath.Join(dir, "jobs", "two-node.sbatch")); !strings.Contains(string(script), `--remote-worker "2=$KVSWEEP_AGENT_URL"`) {
		t.Errorf("the harness is not told of the remote worker 2")
	}
	mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(tmp, "history.db"))
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rc := run.Cells[0]; rc.Outcome != testrun.OK || rc.Image.Digest != digest || len(provenance.Compare(rc.Image.SourceRevisions, revs)) != 0 {
		t.Errorf("collected: %s %s digest %s revisions %s", rc.Outcome, rc.Detail, rc.Image.Digest, rc.Image.SourceRevisions.Short())
	}
	// Nothing outlives the job: no etcd, no service, no agent.
	waitGone(t, "sleep 12[23]|etcd --name head|nats-server --addr", "processes outlived the job")
}
