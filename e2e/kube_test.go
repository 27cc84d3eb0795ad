package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kvsweep/kvsweep/internal/kubeid"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/k8s"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// kubeCluster is the test cluster of scripts/k8s-env.sh: a client of its
// API server and the node directory its pods mount the sweeps from.
type kubeCluster struct {
	client kubernetes.Interface
	sweeps string
}

func kubeTestCluster(t testing.TB) kubeCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Kubernetes cluster of scripts/k8s-env.sh (not with -short)")
	}
	sweeps := os.Getenv("KVSWEEP_K8S_SWEEPS")
	if os.Getenv("KUBECONFIG") == "" || sweeps == "" {
		t.Fatal("KUBECONFIG and KVSWEEP_K8S_SWEEPS are not set: start the cluster with scripts/k8s-env.sh start and eval \"$(scripts/k8s-env.sh env)\" (the README's test command does both)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return kubeCluster{client: cs, sweeps: sweeps}
}

// kubeSpec is a spec for scheduler k8s running the test image's harness
// stand-in; body holds its topologies, engines and matrix.
func (k kubeCluster) spec(name, image, expect, body string) string {
	return fmt.Sprintf(`version: 1
name: %s
scheduler: k8s
kubernetes:
  volume: {host_path: %s}
container: {image: %q, expect: %s}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --topology, "{{.Topology}}", --results-dir, "{{.CellDir}}"]
geometries: {g: {flags: {model: m}}}
%s`, name, k.sweeps, image, expect, body)
}

// sweepDir is a new sweep directory on the volume the pods mount,
// removed when the test ends (files the pods wrote as root included).
func (k kubeCluster) sweepDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp(k.sweeps, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Remove(dir); err != nil { // render writes it whole
		t.Fatal(err)
	}
	return dir
}

// objects counts the sweep's Jobs and pods in the API server.
func (k kubeCluster) objects(t *testing.T, sweepID string) (jobs, pods []string) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: kubeid.LabelSweep + "=" + kubeid.LabelValue(sweepID)}
	jl, err := k.client.BatchV1().Jobs("default").List(context.Background(), sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jl.Items {
		jobs = append(jobs, j.Name)
	}
	pl, err := k.client.CoreV1().Pods("default").List(context.Background(), sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pl.Items {
		pods = append(pods, p.Name+" "+string(p.Status.Phase))
	}
	return jobs, pods
}

// cancelled deletes what a test left of a sweep.
func (k kubeCluster) cancelled(t *testing.T, c cluster, dir string) {
	_, _, _ = kvsweep(t, c, nil, "cancel", dir)
}

func kubeStatus(t *testing.T, dir string) []scheduler.CellStatus {
	t.Helper()
	_, sched, err := scheduler.Open(dir, scheduler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cells, _, err := scheduler.Status(t.Context(), dir, sched)
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

func init() { scheduler.Register("k8s", k8s.Open) }

// The users' Kubernetes path: the image kvsweep image build made, a grid of
// every single-node topology rendered as Indexed Jobs, submitted to a real
// API server and run by a real kubelet; every cell COMPLETED with rows
// naming the image and its commits, verified inside the pod.
func TestKubernetes(t *testing.T) {
	c := clusters(t)[0]
	k := kubeTestCluster(t)
	ref, digest, revs := buildTestImage(t, c)
	image := ref + "@" + digest
	expect := fmt.Sprintf("{dynamo: %s, vllm_adapter: %s}", revs.Commit("dynamo"), revs.Commit("vllm_adapter"))

	t.Run("grid", func(t *testing.T) {
		dir := k.sweepDir(t, "grid")
		defer k.cancelled(t, c, dir)
		spec := k.spec("k8s-grid", image, expect, `topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}
  disagg-2p1d: {kind: disagg-2p1d, resources: {gpus_per_node: 3, cpus_per_task: 1, mem: 200M, time: 10m}}
  sidecar:
    kind: sidecar
    resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}
    args: [--wait-file, "{{.CellDir}}/services/ready-0", --wait-file, "{{.CellDir}}/services/ready-1"]
    service: [sh, -c, 'touch "$KVSWEEP_SERVICES_DIR/ready-$KVCR_SERVICE_INDEX"; exec sleep 3141']
matrix:
  engine: [vllm, sglang]
  topology: [aggregated, disagg-2p1d, sidecar]
  geometry: [g]
  case: [TC-01, TC-02]
`)
		path := writeSpec(t, t.TempDir(), spec)
		out := mustKvsweep(t, c, "run", path, "--out", dir, "--wait", "--interval", "1s", "--insecure-registry", "--quiet")
		t.Log(out)
		cells := kubeStatus(t, dir)
		for _, cs := range cells {
			if cs.State != scheduler.StateCompleted || cs.ExitCode != 0 {
				t.Errorf("%s: %s exit %d (%s)\n%s", cs.Name, cs.State, cs.ExitCode, cs.Reason, kubeLog(dir, cs))
			}
		}
		if len(cells) != 6 {
			t.Errorf("%d cells, want 6", len(cells))
		}
		// One poll of the sweep is two list calls (its Jobs, its pods),
		// whatever its size.
		_, sched, err := scheduler.Open(dir, scheduler.Config{})
		if err != nil {
			t.Fatal(err)
		}
		unpaged, _, err := scheduler.Status(t.Context(), dir, sched)
		if kube := sched.(*k8s.Kube); err != nil || kube.Calls.Load() != 2 || kube.Requests() != 2 {
			t.Errorf("one status: %d API calls, %d requests (%v), want 2", kube.Calls.Load(), kube.Requests(), err)
		}
		// Paged: two list calls still, in pages of two objects (3 Jobs:
		// two pages; 6 pods: three, or four when the last page is
		// empty), with the same answer.
		_, sched, err = scheduler.Open(dir, scheduler.Config{})
		if err != nil {
			t.Fatal(err)
		}
		sched.(*k8s.Kube).PageSize = 2
		paged, _, err := scheduler.Status(t.Context(), dir, sched)
		if kube := sched.(*k8s.Kube); err != nil || kube.Calls.Load() != 2 || kube.Requests() < 5 || kube.Requests() > 7 {
			t.Errorf("one paged status: %d API calls in %d requests (%v), want 2 in 5 to 7 pages", kube.Calls.Load(), kube.Requests(), err)
		}
		if fmt.Sprint(paged) != fmt.Sprint(unpaged) {
			t.Errorf("the paged status differs:\n%v\n%v", paged, unpaged)
		}
		m, err := sweep.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		// One Indexed Job per topology, each holding its cells as pods.
		jobs, pods := k.objects(t, m.SweepID)
		if len(jobs) != 3 || len(pods) != 6 {
			t.Errorf("the API server holds Jobs %v and pods %v, want 3 and 6", jobs, pods)
		}
		mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(t.TempDir(), "history.db"))
		run, err := testrun.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, cell := range run.Cells {
			if cell.Outcome != testrun.OK {
				t.Errorf("%s: %s %s", cell.Name, cell.Outcome, cell.Detail)
			}
			if cell.Image.Digest != digest {
				t.Errorf("%s: image digest %q, want %s", cell.Name, cell.Image.Digest, digest)
			}
			if ms := provenance.Compare(cell.Image.SourceRevisions, revs); len(ms) != 0 {
				t.Errorf("%s: the row's revisions differ from the image's: %v", cell.Name, ms)
			}
		}
		md := mustKvsweep(t, c, "report", dir, "--format", "markdown")
		if !strings.Contains(md, revs.Short()) || !strings.Contains(md, strings.TrimPrefix(digest, "sha256:")[:12]) {
			t.Errorf("the report does not name %s and %s:\n%s", revs.Short(), digest, md)
		}
		// The sidecars ended with their pods.
		waitGone(t, "sleep 3141", "services outlived the pod")
	})

	// A two-node 2P+1D cell: the Job's two pods on two nodes find each
	// other through the cell directory, meet through etcd on the head (the
	// image's etcd), run the services of their workers (0 and 1 on the
	// head, 2 on the second) and the agent on the second; the harness sees
	// them all, and nothing outlives the pods.
	t.Run("two-node", func(t *testing.T) {
		dir := k.sweepDir(t, "twonode")
		defer k.cancelled(t, c, dir)
		path := writeSpec(t, t.TempDir(), k.spec("k8s-twonode", image, expect, `topologies:
  two-node:
    resources: {nodes: 2, cpus_per_task: 1, mem: 200M, time: 5m}
    placement: {head: [0, 1], remote: [2]}
    args: [--etcd, --wait-file, "{{.CellDir}}/services/ready-0", --wait-file, "{{.CellDir}}/services/ready-1", --wait-file, "{{.CellDir}}/services/ready-2", --wait-file, "{{.CellDir}}/remote/agent-ready"]
    agent: [sh, -c, 'echo "agent on $KVSWEEP_NODE in the image: $(cat /opt/nccl-version)"; touch "$KVSWEEP_CELL_DIR/remote/agent-ready"; exec sleep 122']
    service: [sh, -c, 'echo "service $KVCR_SERVICE_INDEX on $KVSWEEP_NODE" > "$KVSWEEP_SERVICES_DIR/where-$KVCR_SERVICE_INDEX"; touch "$KVSWEEP_SERVICES_DIR/ready-$KVCR_SERVICE_INDEX"; exec sleep 123']
matrix: {engine: [vllm], topology: [two-node], geometry: [g], case: [TC-01, TC-06]}
`))
		mustKvsweep(t, c, "run", path, "--out", dir, "--wait", "--interval", "1s", "--insecure-registry", "--quiet")
		cell := kubeStatus(t, dir)[0]
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(dir, "cells", cell.ID, name))
			return string(b)
		}
		if cell.State != scheduler.StateCompleted {
			t.Fatalf("cell %s: %s (%s)\n%s\netcd:\n%s\nremote barrier:\n%s\nagent:\n%s", cell.Name, cell.State, cell.Reason, kubeLog(dir, cell),
				read("etcd.log"), read("remote/barrier.log"), read("remote/agent.log"))
		}
		if !strings.Contains(read("etcd.log"), "ready to serve client requests") {
			t.Errorf("the image's etcd did not serve:\n%s", read("etcd.log"))
		}
		// 2P+1D across the pods: workers 0 and 1 on the head's node, 2 on
		// the second's.
		where := [3]string{strings.TrimSpace(read("services/where-0")), strings.TrimSpace(read("services/where-1")), strings.TrimSpace(read("services/where-2"))}
		if !strings.HasPrefix(where[0], "service 0 on kvsweep-node-") || !strings.HasPrefix(where[2], "service 2 on kvsweep-node-") ||
			strings.TrimPrefix(where[0], "service 0") != strings.TrimPrefix(where[1], "service 1") ||
			strings.TrimPrefix(where[0], "service 0") == strings.TrimPrefix(where[2], "service 2") {
			t.Errorf("the services did not run 2+1 on two nodes: %q", where)
		}
		if a := read("remote/agent.log"); !strings.Contains(a, "in the image: nccl 2.27.3") || !strings.Contains(a, strings.TrimPrefix(where[2], "service 2 on ")) {
			t.Errorf("the agent did not run in the image on the second node: %q", a)
		}
		mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(t.TempDir(), "history.db"))
		run, err := testrun.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if rc := run.Cells[0]; rc.Outcome != testrun.OK || rc.Image.Digest != digest {
			t.Errorf("collected: %s %s digest %s", rc.Outcome, rc.Detail, rc.Image.Digest)
		}
		waitGone(t, "sleep 12[23]|etcd --name head", "processes outlived the pods")
	})

	// A crash between the Job's create and the journal's record: the next
	// submit finds the Job by its name and adopts it; nothing runs twice.
	t.Run("crash-adopted", func(t *testing.T) {
		dir := k.sweepDir(t, "crash")
		defer k.cancelled(t, c, dir)
		path := writeSpec(t, t.TempDir(), k.spec("k8s-crash", image, expect, `topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}
matrix: {engine: [vllm, sglang], topology: [aggregated], geometry: [g], case: [TC-01]}
`))
		mustKvsweep(t, c, "render", path, "--out", dir, "--insecure-registry")
		_, errs, err := kvsweep(t, c, []string{"KVSWEEP_TEST_CRASH_AT=sbatch"}, "submit", dir)
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("submit was not killed after the create: %v\n%s", err, errs)
		}
		m, _ := sweep.ReadManifest(dir)
		if jobs, _ := k.objects(t, m.SweepID); len(jobs) != 1 {
			t.Fatalf("after the crash the API server holds Jobs %v, want the one created", jobs)
		}
		_, errs, err = kvsweep(t, c, nil, "submit", dir)
		if err != nil || !strings.Contains(errs, "1 adopted") {
			t.Fatalf("second submit did not adopt the Job: %v\n%s", err, errs)
		}
		mustKvsweep(t, c, "status", dir, "--watch", "--interval", "1s", "--quiet")
		jobs, pods := k.objects(t, m.SweepID)
		if len(jobs) != 1 || len(pods) != 2 {
			t.Errorf("Jobs %v and pods %v: want one Job of two pods", jobs, pods)
		}
		for _, cs := range kubeStatus(t, dir) {
			if cs.State != scheduler.StateCompleted || cs.Attempt != 1 {
				t.Errorf("%s: %s after %d attempts\n%s", cs.Name, cs.State, cs.Attempt, kubeLog(dir, cs))
			}
		}
	})

	// A failed cell resubmitted runs again as a Job of that one cell (its
	// task list names it), and a pod whose image cannot be pulled is ended
	// and read as a failure outside the test, not left waiting for ever.
	t.Run("resubmit-and-image-pull", func(t *testing.T) {
		dir := k.sweepDir(t, "resubmit")
		defer k.cancelled(t, c, dir)
		path := writeSpec(t, t.TempDir(), k.spec("k8s-resubmit", image, expect, `engines:
  vllm: {}
  bad: {harness: [sh, -c, "exit 3", sh]}
  gone: {image: "`+os.Getenv("KVSWEEP_REGISTRY")+`/e2e/no-such-image:1"}
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}
matrix: {engine: [vllm, bad, gone], topology: [aggregated], geometry: [g], case: [TC-01]}
`))
		mustKvsweep(t, c, "render", path, "--out", dir, "--offline")
		mustKvsweep(t, c, "submit", dir)
		state := func(cells []scheduler.CellStatus, engine string) scheduler.CellStatus {
			for _, cs := range cells {
				if strings.HasPrefix(cs.Name, engine+"-") {
					return cs
				}
			}
			t.Fatalf("no %s cell", engine)
			return scheduler.CellStatus{}
		}
		cells := waitKube(t, dir, 5*time.Minute, "every cell ended", func(cells []scheduler.CellStatus) bool {
			return scheduler.Done(cells)
		})
		if cs := state(cells, "vllm"); cs.State != scheduler.StateCompleted {
			t.Errorf("vllm: %s", cs.State)
		}
		if cs := state(cells, "bad"); cs.State != scheduler.StateFailed || cs.ExitCode != 3 {
			t.Errorf("bad: %s exit %d, want FAILED exit 3", cs.State, cs.ExitCode)
		}
		if cs := state(cells, "gone"); cs.State != scheduler.StateBootFail || !strings.Contains(cs.Reason, "ImagePullBackOff") {
			t.Errorf("gone: %s (%s), want BOOT_FAIL for the image pull", cs.State, cs.Reason)
		}
		m, _ := sweep.ReadManifest(dir)
		jobsBefore, _ := k.objects(t, m.SweepID)
		out := mustKvsweep(t, c, "resubmit", dir, "--failed")
		t.Log(out)
		cells = waitKube(t, dir, 5*time.Minute, "the resubmitted cells ended", func(cells []scheduler.CellStatus) bool {
			return scheduler.Done(cells) && state(cells, "bad").Attempt == 2
		})
		if cs := state(cells, "bad"); cs.State != scheduler.StateFailed || cs.Attempt != 2 || len(cs.Earlier) != 1 {
			t.Errorf("bad after resubmit: %s attempt %d earlier %v", cs.State, cs.Attempt, cs.Earlier)
		}
		if cs := state(cells, "vllm"); cs.Attempt != 1 {
			t.Errorf("the completed cell ran again: attempt %d", cs.Attempt)
		}
		jobs, _ := k.objects(t, m.SweepID)
		if len(jobs) <= len(jobsBefore) {
			t.Errorf("Jobs before %v, after the resubmit %v", jobsBefore, jobs)
		}
		if _, err := os.Stat(filepath.Join(dir, sweep.CellsDir, state(cells, "bad").ID, "attempts")); err != nil {
			t.Errorf("the first attempt's files were not kept: %v", err)
		}
	})

	// --no-array: a Job per cell, each labelled with its cell; a cell over
	// its memory limit is killed by the kernel and ends OUT_OF_MEMORY.
	t.Run("no-array-and-oom", func(t *testing.T) {
		dir := k.sweepDir(t, "noarray")
		defer k.cancelled(t, c, dir)
		path := writeSpec(t, t.TempDir(), k.spec("k8s-noarray", image, expect, `engines:
  vllm: {}
  hungry: {harness: [sh, -c, 'x=$(head -c 400000000 /dev/zero | tr "\\0" a); echo "$x" | wc -c', sh]}
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 64M, time: 10m}}
matrix: {engine: [vllm, hungry], topology: [aggregated], geometry: [g], case: [TC-01, TC-02]}
`))
		mustKvsweep(t, c, "render", path, "--out", dir, "--no-array", "--insecure-registry")
		mustKvsweep(t, c, "submit", dir)
		cells := waitKube(t, dir, 5*time.Minute, "every cell ended", func(cells []scheduler.CellStatus) bool {
			return scheduler.Done(cells)
		})
		m, _ := sweep.ReadManifest(dir)
		jobs, _ := k.objects(t, m.SweepID)
		if len(jobs) != len(m.Cells) {
			t.Errorf("%d Jobs for %d cells", len(jobs), len(m.Cells))
		}
		for _, cs := range cells {
			want := scheduler.StateCompleted
			if strings.HasPrefix(cs.Name, "hungry-") {
				want = scheduler.StateOOM
			}
			if cs.State != want {
				t.Errorf("%s: %s exit %d (%s), want %s\n%s", cs.Name, cs.State, cs.ExitCode, cs.Reason, want, kubeLog(dir, cs))
			}
			sel := metav1.ListOptions{LabelSelector: kubeid.LabelCell + "=" + kubeid.LabelValue(cs.ID)}
			if l, err := k.client.BatchV1().Jobs("default").List(context.Background(), sel); err != nil || len(l.Items) != 1 {
				t.Errorf("%s: no Job labelled with its cell: %v", cs.Name, err)
			}
		}
	})

	// kvsweep ci drives a k8s sweep as it does a Slurm one: render,
	// submit, follow, collect, gates, JUnit.
	t.Run("ci", func(t *testing.T) {
		dir := k.sweepDir(t, "ci")
		defer k.cancelled(t, c, dir)
		tmp := t.TempDir()
		path := writeSpec(t, tmp, k.spec("k8s-ci", image, expect, `topologies:
  aggregated: {resources: {gpus_per_node: 1, cpus_per_task: 1, mem: 200M, time: 5m}}
matrix: {engine: [vllm, sglang], topology: [aggregated], geometry: [g], case: [TC-01]}
`))
		out := mustKvsweep(t, c, "ci", path, "--out", dir, "--baseline", "none", "--interval", "1s", "--insecure-registry",
			"--store", filepath.Join(tmp, "history.db"), "--junit", filepath.Join(tmp, "junit.xml"))
		if !strings.Contains(out, "2 cells: 2 OK") {
			t.Errorf("ci:\n%s", out)
		}
		if b, err := os.ReadFile(filepath.Join(tmp, "junit.xml")); err != nil || !strings.Contains(string(b), `failures="0"`) {
			t.Errorf("junit: %v\n%s", err, b)
		}
	})

	// A cell past its time limit is stopped by the kubelet and ends
	// TIMEOUT, its exit marker written by the job's trap; kvsweep cancel
	// deletes every Job and pod of a sweep, and its cells read CANCELLED.
	t.Run("timeout-and-cancel", func(t *testing.T) {
		dir := k.sweepDir(t, "limits")
		defer k.cancelled(t, c, dir)
		path := writeSpec(t, t.TempDir(), k.spec("k8s-limits", image, expect, `case_grouping: separate
engines:
  slow: {harness: [sh, -c, "exec sleep 600", sh]}
topologies:
  short: {kind: aggregated, resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 20s}}
  long: {kind: aggregated, resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}}
matrix: {engine: [slow], topology: [short, long], geometry: [g], case: [TC-01, TC-02]}
`))
		mustKvsweep(t, c, "render", path, "--out", dir, "--insecure-registry")
		mustKvsweep(t, c, "submit", dir)
		m, _ := sweep.ReadManifest(dir)
		short := map[string]bool{}
		for _, cell := range m.Cells {
			short[cell.ID] = cell.Topology == "short"
		}
		cells := waitKube(t, dir, 5*time.Minute, "the short cells TIMEOUT and the long ones RUNNING", func(cells []scheduler.CellStatus) bool {
			for _, cs := range cells {
				if short[cs.ID] && cs.State != scheduler.StateTimeout || !short[cs.ID] && cs.State != scheduler.StateRunning {
					return false
				}
			}
			return true
		})
		for _, cs := range cells {
			if !short[cs.ID] {
				continue
			}
			mk, ok, err := sweep.ReadExitMarker(dir, cs.ID)
			if err != nil || !ok || mk.Signal != "TERM" {
				t.Errorf("%s: exit marker %+v %v %v: want one written on TERM", cs.Name, mk, ok, err)
			}
		}
		out := mustKvsweep(t, c, "cancel", dir)
		t.Log(out)
		for end := time.Now().Add(2 * time.Minute); ; {
			jobs, pods := k.objects(t, m.SweepID)
			if len(jobs) == 0 && len(pods) == 0 {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("after cancel the API server still holds Jobs %v and pods %v", jobs, pods)
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, cs := range kubeStatus(t, dir) {
			want := scheduler.StateCancelled
			if short[cs.ID] {
				want = scheduler.StateTimeout
			}
			if cs.State != want {
				t.Errorf("%s: %s, want %s", cs.Name, cs.State, want)
			}
		}
		waitGone(t, "sleep 600", "the harness outlived its cancelled pod")
	})
}

// waitKube polls status until cond holds or the timeout passes.
func waitKube(t *testing.T, dir string, timeout time.Duration, what string, cond func([]scheduler.CellStatus) bool) []scheduler.CellStatus {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		cells := kubeStatus(t, dir)
		if cond(cells) {
			return cells
		}
		if time.Now().After(end) {
			t.Fatalf("waiting for %s: %s", what, describe(cells))
		}
		time.Sleep(time.Second)
	}
}

// kubeLog is a cell's pod output, for failure messages.
func kubeLog(dir string, cs scheduler.CellStatus) string {
	var b strings.Builder
	for _, rel := range sweep.LogFiles(dir, cs.ID) {
		data, _ := os.ReadFile(filepath.Join(dir, rel))
		fmt.Fprintf(&b, "== %s\n%s\n", rel, data)
	}
	return b.String()
}

// Every Job kvsweep renders, overlays applied and filled in for a
// submission (an array with a throttle, held, avoiding a node), is
// accepted by the API server's own validation (a dry-run create).
func TestKubernetesObjectsValid(t *testing.T) {
	c := clusters(t)[0]
	k := kubeTestCluster(t)
	src, err := os.ReadFile("../render/kubejob/testdata/k8s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, f := range []string{"overlay-priority.yaml", "overlay-env.json"} {
		b, err := os.ReadFile(filepath.Join("../render/kubejob/testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := strings.ReplaceAll(string(src), "HOSTPATH", k.sweeps)
	spec = strings.Replace(spec, "namespace: kvcr-tests", "namespace: default", 1)
	path := writeSpec(t, tmp, spec)
	dir := k.sweepDir(t, "valid")
	mustKvsweep(t, c, "render", path, "--out", dir, "--offline")
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range m.Jobs {
		b, err := os.ReadFile(filepath.Join(dir, j.Object))
		if err != nil {
			t.Fatal(err)
		}
		var job batchv1.Job
		if err := yaml.UnmarshalStrict(b, &job); err != nil {
			t.Fatal(err)
		}
		req := scheduler.SubmitRequest{Dir: dir, Script: j.Script, Object: j.Object, JobName: sweep.SubmissionName(m.SweepID, j.Name, 7),
			Hold: true, Exclude: []string{"bad-node-1"}}
		if j.Array {
			req.Array, req.Throttle, req.Offset = "0-3,7", 2, 10
		}
		if err := k8s.Fill(&job, req); err != nil {
			t.Fatal(err)
		}
		_, err = k.client.BatchV1().Jobs("default").Create(context.Background(), &job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Errorf("%s: the API server refuses the Job: %v", j.Object, err)
		}
	}
	// And a Job the server must refuse is refused: the check can fail.
	var bad batchv1.Job
	b, _ := os.ReadFile(filepath.Join(dir, m.Jobs[0].Object))
	_ = yaml.Unmarshal(b, &bad)
	bad.Name = "Not_A_Name"
	if _, err := k.client.BatchV1().Jobs("default").Create(context.Background(), &bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
		t.Error("the API server accepted a Job with an invalid name")
	}
}

// The API server down while kvsweep submits: the create is retried until
// it is back, and the sweep holds one Job per submission. The sweep
// directory here is on a PersistentVolumeClaim (bound to a volume of the
// node directory), as most clusters provide it.
func TestKubernetesOutageAndClaim(t *testing.T) {
	c := clusters(t)[0]
	k := kubeTestCluster(t)
	ref, digest, revs := buildTestImage(t, c)
	ctx := context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "kvsweep-e2e-sweeps"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: k.sweeps}},
		}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "sweeps", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
	if _, err := k.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}) })
	if _, err := k.client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k.client.CoreV1().PersistentVolumeClaims("default").Delete(ctx, pvc.Name, metav1.DeleteOptions{})
	})

	expect := fmt.Sprintf("{dynamo: %s, vllm_adapter: %s}", revs.Commit("dynamo"), revs.Commit("vllm_adapter"))
	spec := strings.Replace(k.spec("k8s-outage", ref+"@"+digest, expect, `topologies:
  aggregated: {resources: {gpus_per_node: 1, cpus_per_task: 1, mem: 200M, time: 10m}}
  disagg-2p1d: {kind: disagg-2p1d, resources: {gpus_per_node: 3, cpus_per_task: 1, mem: 200M, time: 10m}}
matrix: {engine: [vllm, sglang], topology: [aggregated, disagg-2p1d], geometry: [g], case: [TC-01]}
`), "volume: {host_path: "+k.sweeps+"}", "volume: {claim: sweeps, path: "+k.sweeps+"}", 1)
	path := writeSpec(t, t.TempDir(), spec)
	dir := k.sweepDir(t, "outage")
	defer k.cancelled(t, c, dir)
	mustKvsweep(t, c, "render", path, "--out", dir, "--insecure-registry")
	if b, _ := os.ReadFile(filepath.Join(dir, "jobs", "aggregated.job.yaml")); !strings.Contains(string(b), "claimName: sweeps") {
		t.Fatalf("the Job does not mount the claim:\n%s", b)
	}
	ctl := func(action string) {
		out, err := exec.Command("../scripts/k8s-env.sh", action).CombinedOutput()
		if err != nil {
			t.Fatalf("k8s-env.sh %s: %v\n%s", action, err, out)
		}
	}
	ctl("api-stop")
	defer ctl("api-start")
	cmd := exec.Command(binary, "submit", dir, "--retry-deadline", "5m")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The API server comes back once submit has said it is retrying.
	for end := time.Now().Add(2 * time.Minute); !strings.Contains(out.String(), "retrying in"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			_ = cmd.Process.Kill()
			t.Fatalf("submit said nothing of retrying:\n%s", out.String())
		}
	}
	ctl("api-start")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("submit across the outage: %v\n%s", err, out.String())
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("submit did not finish after the API server came back:\n%s", out.String())
	}
	mustKvsweep(t, c, "status", dir, "--watch", "--interval", "1s", "--quiet")
	m, _ := sweep.ReadManifest(dir)
	jobs, pods := k.objects(t, m.SweepID)
	if len(jobs) != 2 || len(pods) != 4 {
		t.Errorf("Jobs %v and pods %v: want one Job per submission, one pod per cell", jobs, pods)
	}
	for _, cs := range kubeStatus(t, dir) {
		if cs.State != scheduler.StateCompleted {
			t.Errorf("%s: %s\n%s", cs.Name, cs.State, kubeLog(dir, cs))
		}
	}
}

// syncBuffer is a strings.Builder a child process and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
