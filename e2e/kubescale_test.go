package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kvsweep/kvsweep/internal/kubeid"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/k8s"
	"github.com/kvsweep/kvsweep/sweep"
)

// kubeScaleCells is the size of the Kubernetes scale benchmark's sweep:
// ten topologies of 100 cells, so ten Indexed Jobs.
const kubeScaleCells = 1000

// BenchmarkKubeScale is kvsweep on Kubernetes at 1,000 cells, on the test
// cluster: submit (held: only the creates are measured) against the floor,
// client-go creating the same rendered Jobs (what kubectl create -f of
// them sends, without kubectl's start-up), in turn; then status polls of
// the 1,000 pods one sweep's Job controller makes (their CPU request fits
// no node, so they wait unscheduled and cost the machine little), with
// each poll's list calls and HTTP requests. $RUNS samples of each (5),
// reported as median, min and max: run it with -benchtime 1x -count 1
// (one sweep of 1,000 pods, not one per sample).
func BenchmarkKubeScale(b *testing.B) {
	c := clusters(b)[0]
	k := kubeTestCluster(b)
	runs := 5
	if n, err := strconv.Atoi(os.Getenv("RUNS")); err == nil && n > 0 {
		runs = n
	}
	var kv, floor, reqs []float64
	for range runs {
		ms, n := kubeSubmit(b, c, k)
		kv, reqs = append(kv, ms), append(reqs, n)
		floor = append(floor, kubeCreate(b, c, k))
	}
	reportSamples(b, "submit-kvsweep-ms", kv)
	reportSamples(b, "submit-create-ms", floor)
	reportSamples(b, "submit-kvsweep-requests", reqs)

	dir := kubeScaleSweep(b, c, k)
	mustKvsweep(b, c, "submit", dir)
	defer mustKvsweep(b, c, "cancel", dir)
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		b.Fatal(err)
	}
	waitPods(b, k, m.SweepID, kubeScaleCells)
	var polls, calls, requests []float64
	for range runs {
		_, sched, err := scheduler.Open(dir, scheduler.Config{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		cells, _, err := scheduler.Status(context.Background(), dir, sched)
		polls = append(polls, float64(time.Since(start).Milliseconds()))
		if err != nil || len(cells) != kubeScaleCells {
			b.Fatalf("status: %d cells, %v", len(cells), err)
		}
		kube := sched.(*k8s.Kube)
		calls, requests = append(calls, float64(kube.Calls.Load())), append(requests, float64(kube.Requests()))
	}
	reportSamples(b, "poll-ms", polls)
	reportSamples(b, "poll-calls", calls)
	reportSamples(b, "poll-requests", requests)
}

// kubeSubmit times kvsweep's submit of a held sweep, in ms, and counts
// its HTTP requests; then deletes it.
func kubeSubmit(b *testing.B, c cluster, k kubeCluster) (ms, requests float64) {
	b.Helper()
	dir := kubeScaleSweep(b, c, k)
	_, sched, err := scheduler.Open(dir, scheduler.Config{})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	rep, err := scheduler.Submit(context.Background(), dir, sched, scheduler.SubmitOptions{Hold: true})
	ms = float64(time.Since(start).Milliseconds())
	if err != nil || rep.Cells != kubeScaleCells {
		b.Fatalf("submit: %+v, %v", rep, err)
	}
	requests = float64(sched.(*k8s.Kube).Requests())
	deleteSweep(b, k, dir)
	return ms, requests
}

// kubeCreate times client-go creating the Jobs kvsweep would, in ms,
// with a client of kvsweep's rate limit (50 a second, bursts of 100; the
// test cluster's client has client-go's 5 and 10); then deletes them.
func kubeCreate(b *testing.B, c cluster, k kubeCluster) float64 {
	b.Helper()
	dir := kubeScaleSweep(b, c, k)
	jobs := renderedJobs(b, c, dir)
	rc, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS, rc.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for _, job := range jobs {
		if _, err := cs.BatchV1().Jobs(job.Namespace).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	ms := float64(time.Since(start).Milliseconds())
	deleteSweep(b, k, dir)
	return ms
}

// reportSamples reports the median, min and max of samples as NAME-median,
// NAME-min and NAME-max.
func reportSamples(b *testing.B, name string, samples []float64) {
	s := slices.Clone(samples)
	slices.Sort(s)
	b.ReportMetric(s[(len(s)-1)/2], name+"-median")
	b.ReportMetric(s[0], name+"-min")
	b.ReportMetric(s[len(s)-1], name+"-max")
}

// kubeScaleSweep renders the benchmark's sweep: kubeScaleCells cells in
// ten topologies whose pods ask for more CPUs than a node has.
func kubeScaleSweep(b *testing.B, c cluster, k kubeCluster) string {
	b.Helper()
	var tops, names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("t%d", i))
		tops = append(tops, fmt.Sprintf("  t%d: {kind: aggregated, resources: {cpus_per_task: 64, mem: 10M, time: 5m}}", i))
	}
	var cases []string
	for i := range kubeScaleCells / 10 {
		cases = append(cases, fmt.Sprintf("TC-%03d", i+1))
	}
	body := fmt.Sprintf("case_grouping: separate\ntopologies:\n%s\nmatrix: {engine: [vllm], topology: [%s], geometry: [g], case: [%s]}\n",
		strings.Join(tops, "\n"), strings.Join(names, ", "), strings.Join(cases, ", "))
	image := "registry.invalid/kvsweep/unpulled@sha256:" + strings.Repeat("0", 64)
	path := writeSpec(b, b.TempDir(), k.spec("kscale", image, "{}", body))
	dir := k.sweepDir(b, "kscale")
	mustKvsweep(b, c, "render", path, "--out", dir)
	return dir
}

// renderedJobs is what kvsweep submit would create, from its dry run.
func renderedJobs(b *testing.B, c cluster, dir string) []*batchv1.Job {
	b.Helper()
	out := mustKvsweep(b, c, "submit", dir, "--hold", "--dry-run")
	var jobs []*batchv1.Job
	for _, doc := range strings.Split(out, "\n---\n") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		if !strings.Contains(doc, "kind: Job") {
			continue
		}
		var job batchv1.Job
		if err := yaml.Unmarshal([]byte(doc), &job); err != nil {
			b.Fatalf("a dry run's Job: %v\n%s", err, doc)
		}
		jobs = append(jobs, &job)
	}
	if len(jobs) != 10 {
		b.Fatalf("the dry run shows %d Jobs, want 10", len(jobs))
	}
	return jobs
}

// deleteSweep deletes what the floor created.
func deleteSweep(b *testing.B, k kubeCluster, dir string) {
	b.Helper()
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		b.Fatal(err)
	}
	bg := metav1.DeletePropagationBackground
	err = k.client.BatchV1().Jobs("default").DeleteCollection(context.Background(), metav1.DeleteOptions{PropagationPolicy: &bg},
		metav1.ListOptions{LabelSelector: kubeid.LabelSweep + "=" + kubeid.LabelValue(m.SweepID)})
	if err != nil {
		b.Fatal(err)
	}
}

// waitPods waits (at most ten minutes) until the sweep has n pods.
func waitPods(b *testing.B, k kubeCluster, sweepID string, n int) {
	b.Helper()
	sel := metav1.ListOptions{LabelSelector: kubeid.LabelSweep + "=" + kubeid.LabelValue(sweepID)}
	for end := time.Now().Add(10 * time.Minute); ; {
		l, err := k.client.CoreV1().Pods("default").List(context.Background(), sel)
		if err != nil {
			b.Fatal(err)
		}
		if len(l.Items) >= n {
			return
		}
		if time.Now().After(end) {
			b.Fatalf("%d pods of %d after ten minutes", len(l.Items), n)
		}
		time.Sleep(2 * time.Second)
	}
}
