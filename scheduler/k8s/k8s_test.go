package k8s

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kvsweep/kvsweep/internal/kubeid"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// The API server's pod states, as kvsweep reads them. (The real
// transitions are exercised against a real cluster in e2e; this pins the
// mapping of each reason, including the ones a test cluster cannot
// produce on demand: OOM kills, evictions.)
func TestPodState(t *testing.T) {
	term := func(code int32, reason string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: kubeid.ContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}
	}
	wait := func(reason string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: kubeid.ContainerName, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details"}}}}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		del    bool
		want   string
		code   int
	}{
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: term(0, "Completed")}, false, scheduler.StateCompleted, 0},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: term(3, "Error")}, false, scheduler.StateFailed, 3},
		{"oom", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: term(137, "OOMKilled")}, false, scheduler.StateOOM, 137},
		{"deadline", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", ContainerStatuses: term(143, "Error")}, false, scheduler.StateTimeout, 143},
		{"evicted", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}, false, scheduler.StatePreempted, 0},
		{"disrupted", corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}, false, scheduler.StatePreempted, 0},
		{"image pull", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: wait("ImagePullBackOff")}, false, scheduler.StateBootFail, 0},
		{"missing secret", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: wait("CreateContainerConfigError")}, false, scheduler.StateBootFail, 0},
		{"creating", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: wait("ContainerCreating")}, false, scheduler.StatePending, 0},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes"}}}, false, scheduler.StatePending, 0},
		{"running", corev1.PodStatus{Phase: corev1.PodRunning}, false, scheduler.StateRunning, 0},
		{"deleted", corev1.PodStatus{Phase: corev1.PodRunning}, true, scheduler.StateCancelled, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Status: tc.status}
			if tc.del {
				p.DeletionTimestamp = &now
			}
			got := podState(p)
			if got.State != tc.want || got.ExitCode != tc.code || got.Source != Source {
				t.Errorf("got %+v, want %s exit %d", got, tc.want, tc.code)
			}
			if tc.name == "unschedulable" && !strings.Contains(got.Reason, "0/2 nodes") {
				t.Errorf("reason %q does not say why", got.Reason)
			}
		})
	}
}

func rendered() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{kubeid.LabelSweep: "sw"}},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](4), Parallelism: ptr.To[int32](4),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kubeid.LabelSweep: "sw"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:         kubeid.ContainerName,
					Env:          []corev1.EnvVar{{Name: kubeid.EnvSweepDir}, {Name: kubeid.EnvTasks}, {Name: kubeid.EnvOffset, Value: "0"}},
					VolumeMounts: []corev1.VolumeMount{{Name: kubeid.VolumeName, MountPath: "/srv/sweeps"}},
				}}},
			},
		},
	}
}

// A submission fills in what differs per submission, and refuses what
// Kubernetes cannot do or would not find.
func TestFill(t *testing.T) {
	job := rendered()
	r := scheduler.SubmitRequest{Dir: "/srv/sweeps/sw", JobName: "kvs.sw.aggregated.s3", Array: "0-3,7", Offset: 10, Throttle: 2, Hold: true, Exclude: []string{"n1"}}
	if err := Fill(job, r); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if job.Name != JobName(r.JobName) || *job.Spec.Completions != 5 || *job.Spec.Parallelism != 2 || !*job.Spec.Suspend ||
		env[kubeid.EnvSweepDir] != r.Dir || env[kubeid.EnvTasks] != "0-3,7" || env[kubeid.EnvOffset] != "10" ||
		job.Annotations[kubeid.AnnotationSubmission] != r.JobName || job.Spec.Template.Labels[kubeid.LabelSubmission] == "" {
		t.Errorf("filled Job: %+v env %v", job, env)
	}
	if na := job.Spec.Template.Spec.Affinity.NodeAffinity; na == nil ||
		na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "n1" {
		t.Errorf("excluded nodes not in the affinity: %+v", job.Spec.Template.Spec.Affinity)
	}
	if len(job.Name) > 56 || strings.ContainsAny(job.Name, "._") {
		t.Errorf("name %q is not a short DNS label", job.Name)
	}
	var re *scheduler.RefusedError
	if err := Fill(rendered(), scheduler.SubmitRequest{Dir: "/elsewhere/sw", JobName: "x"}); !errors.As(err, &re) || !strings.Contains(err.Error(), "not on the volume") {
		t.Errorf("a sweep off the volume: %v", err)
	}
	if err := Fill(rendered(), scheduler.SubmitRequest{Dir: "/srv/sweeps/sw", JobName: "x", Overrides: map[string]string{"partition": "gpu"}}); !errors.As(err, &re) {
		t.Errorf("a Slurm partition: %v", err)
	}
}

// A transient API error is retried; a refusal is not, and a create whose
// Job is already there (a lost answer, a crash) adopts it.
func TestSubmitRetriesAndAdopts(t *testing.T) {
	mem := newMem(nil, nil)
	mem.fail["CreateJob"] = []error{apierrors.NewServiceUnavailable("etcd leader changed"), errors.New("connection refused")}
	dir := t.TempDir()
	k := &Kube{client: mem, Namespace: "ns", Sweep: "sw", Dir: dir, Deadline: time.Minute, Log: io.Discard}
	r := scheduler.SubmitRequest{Dir: "/srv/sweeps/sw", JobName: "kvs.sw.aggregated.s1", Array: "0-3"}
	job := rendered()
	if err := Fill(job, r); err != nil {
		t.Fatal(err)
	}
	create := func() error {
		return k.call(context.Background(), "create", func() error { return k.client.CreateJob(context.Background(), job) })
	}
	if err := create(); err != nil {
		t.Fatalf("after two transient errors: %v", err)
	}
	if k.Calls.Load() != 3 {
		t.Errorf("%d calls, want 3", k.Calls.Load())
	}
	found, err := k.FindByName(context.Background(), r.JobName, time.Time{})
	if err != nil || len(found) != 1 || found[0] != job.Name {
		t.Errorf("FindByName: %v %v", found, err)
	}
	if found, _ := k.FindByName(context.Background(), "kvs.sw.aggregated.s2", time.Time{}); len(found) != 0 {
		t.Errorf("a submission never made was found: %v", found)
	}
	mem.fail["CreateJob"] = []error{apierrors.NewForbidden(schema.GroupResource{Resource: "jobs"}, "x", errors.New("quota exceeded"))}
	calls := k.Calls.Load()
	if err := create(); err == nil || transient(err) || k.Calls.Load() != calls+1 {
		t.Errorf("a refusal: %v after %d calls", err, k.Calls.Load()-calls)
	}
}

// One poll is two list calls for the whole sweep, and reads every task:
// pods by completion index through the Job's task list, indexes without a
// pod from the Job.
func TestPoll(t *testing.T) {
	job := rendered()
	r := scheduler.SubmitRequest{Dir: "/srv/sweeps/sw", JobName: "kvs.sw.aggregated.s1", Array: "0,5,9", Offset: 0}
	if err := Fill(job, r); err != nil {
		t.Fatal(err)
	}
	job.Status.CompletedIndexes = "1"
	pod := func(idx string, phase corev1.PodPhase, code int32) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-" + idx, Namespace: "ns",
			Labels:      map[string]string{kubeid.LabelSweep: "sw", batchv1.JobNameLabel: job.Name},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: idx}},
			Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeid.ContainerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}}}
	}
	k := &Kube{client: newMem([]*batchv1.Job{job}, []*corev1.Pod{pod("0", corev1.PodFailed, 2)}), Namespace: "ns", Sweep: "sw", Deadline: time.Minute}
	p, err := k.Poll(context.Background(), []scheduler.PollJob{{ID: job.Name, Name: r.JobName}, {ID: "gone", Name: "kvs.sw.x.s2"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{job.Name + "_0": scheduler.StateFailed, job.Name + "_5": scheduler.StateCompleted, job.Name + "_9": scheduler.StatePending}
	for key, state := range want {
		if p.Tasks[key].State != state {
			t.Errorf("%s: %+v, want %s", key, p.Tasks[key], state)
		}
	}
	if len(p.Tasks) != 3 || p.Tasks[job.Name+"_0"].ExitCode != 2 || k.Calls.Load() != 2 || p.Accounting {
		t.Errorf("poll %+v after %d calls", p, k.Calls.Load())
	}
}

// A pod that cannot pull its image is ended, and its cell reads BOOT_FAIL
// from the Job once the pod is gone.
func TestPollEndsBootFailed(t *testing.T) {
	job := rendered()
	r := scheduler.SubmitRequest{Dir: "/srv/sweeps/sw", JobName: "kvs.sw.aggregated.s1", Array: "0"}
	if err := Fill(job, r); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-0", Namespace: "ns",
		Labels:      map[string]string{kubeid.LabelSweep: "sw", batchv1.JobNameLabel: job.Name},
		Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeid.ContainerName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}}}}}
	mem := newMem([]*batchv1.Job{job}, []*corev1.Pod{pod})
	k := &Kube{client: mem, Namespace: "ns", Sweep: "sw", Deadline: time.Minute}
	jobs := []scheduler.PollJob{{ID: job.Name, Name: r.JobName}}
	for i := range 2 {
		p, err := k.Poll(context.Background(), jobs)
		if err != nil {
			t.Fatal(err)
		}
		if ts := p.Tasks[job.Name+"_0"]; ts.State != scheduler.StateBootFail || !strings.Contains(ts.Reason, "ImagePullBackOff") {
			t.Errorf("poll %d: %+v, want BOOT_FAIL naming the pull", i, ts)
		}
		if len(mem.pods) != 0 {
			t.Errorf("poll %d: the pod was not ended", i)
		}
	}
}

// Cancelling one cell of a larger Job deletes its pod only; one whose pod
// does not exist yet is refused, saying why; the cancelled task is
// recorded CANCELLED, and the Job stays for the others.
func TestCancelOneCell(t *testing.T) {
	job := rendered()
	r := scheduler.SubmitRequest{Dir: "/srv/sweeps/sw", JobName: "kvs.sw.aggregated.s1", Array: "0-2", Throttle: 2}
	if err := Fill(job, r); err != nil {
		t.Fatal(err)
	}
	pod := func(idx string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-" + idx, Namespace: "ns",
			Labels:      map[string]string{kubeid.LabelSweep: "sw", batchv1.JobNameLabel: job.Name},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: idx}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	mem := newMem([]*batchv1.Job{job}, []*corev1.Pod{pod("0"), pod("1")})
	dir := t.TempDir()
	k := &Kube{client: mem, Namespace: "ns", Sweep: "sw", Dir: dir, Deadline: time.Minute}
	err := k.Cancel(context.Background(), []string{job.Name + "_0", job.Name + "_2"})
	if err == nil || !strings.Contains(err.Error(), job.Name+"_2: no pod yet") {
		t.Errorf("cancel of a task with no pod: %v", err)
	}
	if _, ok := mem.pods[job.Name+"-0"]; ok {
		t.Error("the cancelled cell's pod is still there")
	}
	if _, ok := mem.pods[job.Name+"-1"]; !ok || len(mem.jobs) != 1 {
		t.Error("cancelling one cell deleted another's pod or the Job")
	}
	seen, err := sweep.ReadObserved(dir)
	if err != nil || seen[job.Name+"_0"].State != scheduler.StateCancelled || seen[job.Name+"_2"].State != "" {
		t.Errorf("observed %v %v", seen, err)
	}
}

// A 429 with Retry-After (what is left after client-go's own retries of
// it) is retried after the server's delay, not the backoff's.
func TestCallHonoursRetryAfter(t *testing.T) {
	var log strings.Builder
	k := &Kube{client: newMem(nil, nil), Deadline: time.Minute, Log: &log}
	tries := 0
	err := k.call(context.Background(), "listing the sweep's pods", func() error {
		if tries++; tries == 1 {
			return apierrors.NewTooManyRequests("the API server is busy", 2)
		}
		return nil
	})
	if err != nil || tries != 2 || !strings.Contains(log.String(), "retrying in 2s") {
		t.Errorf("after a 429 with Retry-After 2: %v, %d tries, said %q", err, tries, log.String())
	}
}

// A list is read page by page until the server says no more; a continue
// token that expired starts it again once, dropping what was read.
func TestPagedRestartsOnExpiredToken(t *testing.T) {
	expired := apierrors.NewResourceExpired("the continue token is too old")
	var got []string
	pages := []struct {
		cont string
		err  error
	}{{"a", nil}, {"", expired}, {"b", nil}, {"c", nil}, {"", nil}}
	i := 0
	err := paged(func(cont string) (string, error) {
		p := pages[i]
		i++
		if p.err == nil {
			got = append(got, "page after "+cont)
		}
		return p.cont, p.err
	}, func() { got = got[:0] })
	if err != nil || i != 5 || strings.Join(got, ",") != "page after ,page after b,page after c" {
		t.Errorf("paged: %v after %d calls, read %q", err, i, got)
	}
	twice := []error{expired, expired}
	i = 0
	if err := paged(func(string) (string, error) { e := twice[i]; i++; return "", e }, func() {}); !apierrors.IsResourceExpired(err) || i != 2 {
		t.Errorf("a second expired token: %v, want the error", err)
	}
}
