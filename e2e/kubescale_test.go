package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// them sends, without kubectl's start-up); then one status poll of the
// 1,000 pods the Job controller makes (their CPU request fits no node, so
// they wait unscheduled and cost the machine nothing), with its list calls
// and HTTP requests.
func BenchmarkKubeScale(b *testing.B) {
	c := clusters(b)[0]
	k := kubeTestCluster(b)
	b.Run("submit/kvsweep", func(b *testing.B) {
		for range b.N {
			dir := kubeScaleSweep(b, c, k)
			_, sched, err := scheduler.Open(dir, scheduler.Config{})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			rep, err := scheduler.Submit(context.Background(), dir, sched, scheduler.SubmitOptions{Hold: true})
			b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/submit")
			if err != nil || rep.Cells != kubeScaleCells {
				b.Fatalf("submit: %+v, %v", rep, err)
			}
			b.ReportMetric(float64(sched.(*k8s.Kube).Requests()), "requests/submit")
			mustKvsweep(b, c, "cancel", dir)
		}
	})
	b.Run("submit/create", func(b *testing.B) {
		for range b.N {
			dir := kubeScaleSweep(b, c, k)
			jobs := renderedJobs(b, c, dir)
			start := time.Now()
			for _, job := range jobs {
				if _, err := k.client.BatchV1().Jobs(job.Namespace).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/submit")
			b.ReportMetric(float64(len(jobs)), "requests/submit")
			deleteSweep(b, k, dir)
		}
	})
	b.Run("poll", func(b *testing.B) {
		dir := kubeScaleSweep(b, c, k)
		mustKvsweep(b, c, "submit", dir)
		defer mustKvsweep(b, c, "cancel", dir)
		m, err := sweep.ReadManifest(dir)
		if err != nil {
			b.Fatal(err)
		}
		waitPods(b, k, m.SweepID, kubeScaleCells)
		b.ResetTimer()
		for range b.N {
			_, sched, err := scheduler.Open(dir, scheduler.Config{})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			cells, _, err := scheduler.Status(context.Background(), dir, sched)
			b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/poll")
			if err != nil || len(cells) != kubeScaleCells {
				b.Fatalf("status: %d cells, %v", len(cells), err)
			}
			kube := sched.(*k8s.Kube)
			b.ReportMetric(float64(kube.Calls), "calls/poll")
			b.ReportMetric(float64(kube.Requests()), "requests/poll")
		}
	})
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
