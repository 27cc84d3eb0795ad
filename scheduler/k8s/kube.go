// Package k8s runs a rendered sweep on Kubernetes (scheduler k8s): it
// implements scheduler.Scheduler with client-go over the Jobs that package
// kubejob rendered into the sweep directory.
//
// A submission creates one Job, named after the submission (a DNS label
// derived from the journal's submission name), so a crash between the
// create and the journal's record is settled by looking the name up, and
// a create repeated after such a crash finds the Job instead of making a
// second. A poll is two list calls for the whole sweep (its Jobs and its
// pods, by the sweep's label), whatever its size. Cancel deletes Jobs with
// their pods, or single pods for single cells of a larger Job.
package k8s

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kvsweep/kvsweep/internal/kubeid"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// Source is the TaskState source of answers from the API server.
const Source = "k8s"

// MaxObjectSize bounds a rendered Job file.
const MaxObjectSize = 1 << 20

// Kube is the Kubernetes scheduler of one sweep directory.
type Kube struct {
	client    api
	Namespace string
	// Sweep is the sweep's label value (kubeid.LabelValue of its id).
	Sweep string
	Dir   string
	// Deadline bounds the retries of one call (default 10 minutes).
	Deadline time.Duration
	Log      io.Writer
	// Calls counts the API calls made, for tests and benchmarks.
	Calls int
	// clientErr says why client is nil.
	clientErr error
}

// Open is the scheduler.Opener of scheduler k8s: the client from the
// kubeconfig kubectl would use ($KUBECONFIG, ~/.kube/config, or the
// pod's service account), the namespace from the rendered Jobs.
func Open(dir string, m *sweep.Manifest, cfg scheduler.Config) (scheduler.Scheduler, error) {
	for _, j := range m.Jobs {
		if j.Object == "" {
			return nil, fmt.Errorf("job %s of sweep %s was rendered for %s, not Kubernetes: render the spec with scheduler: k8s", j.Name, m.SweepID, m.Scheduler)
		}
	}
	ns := ""
	if len(m.Jobs) > 0 { // every Job of a sweep is in the spec's one namespace
		job, err := readObject(dir, m.Jobs[0].Object)
		if err != nil {
			return nil, err
		}
		ns = job.Namespace
	}
	k := &Kube{Namespace: ns, Sweep: kubeid.LabelValue(m.SweepID), Dir: dir, Deadline: cfg.RetryDeadline, Log: cfg.Log}
	// No client is no error yet: submit --dry-run needs none.
	k.client, k.clientErr = connect()
	return k, nil
}

// connect returns a client of the cluster kubectl would use.
func connect() (api, error) {
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w (KUBECONFIG names the cluster's kubeconfig, as for kubectl)", err)
	}
	// One poll is two calls whatever the sweep's size; submits of many
	// jobs should not wait on the client's default rate limit.
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = "kvsweep"
	return newREST(rc)
}

// Name implements scheduler.Scheduler.
func (k *Kube) Name() string { return "k8s" }

// MaxArraySize implements scheduler.Scheduler: an Indexed Job holds up to
// 100,000 completions. It asks the cluster nothing (submit --dry-run
// relies on that).
func (k *Kube) MaxArraySize(context.Context) (int, error) { return 100000, nil }

// JobName is the Kubernetes name of a submission: a DNS label short
// enough that "NAME-INDEX" is one too, readable, and unique to the
// submission name (a hash of it ends the name).
func JobName(submission string) string {
	sum := sha256.Sum256([]byte(submission))
	readable := kubeid.Sanitize(submission)
	if len(readable) > 45 {
		readable = strings.TrimRight(readable[:45], "-")
	}
	return readable + "-" + hex.EncodeToString(sum[:4])
}

func readObject(dir, rel string) (*batchv1.Job, error) {
	b, err := sweep.ReadFile(dir, rel, MaxObjectSize)
	if err != nil {
		return nil, err
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		return nil, fmt.Errorf("%s: %v", rel, err)
	}
	return &job, nil
}

// transient reports whether an API error is worth retrying: the server
// unreachable, overloaded or timing out.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true // no answer from the server at all: connection refused, reset, DNS
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err)
}

// call runs one API call, retrying transient failures with capped
// exponential backoff (1 s, 2 s ... 30 s) until the deadline.
func (k *Kube) call(ctx context.Context, what string, f func() error) error {
	deadline := cmp.Or(k.Deadline, 10*time.Minute)
	end := time.Now().Add(deadline)
	wait := time.Second
	if k.client == nil {
		return fmt.Errorf("%s: %w", what, k.clientErr)
	}
	for try := 1; ; try++ {
		k.Calls++
		err := f()
		if !transient(err) {
			return err
		}
		if time.Now().Add(wait).After(end) {
			return fmt.Errorf("%s: %w (still failing after %d tries over %s; raise --retry-deadline to wait longer)", what, err, try, deadline)
		}
		if k.Log != nil {
			fmt.Fprintf(k.Log, "kvsweep: %s: %v; retrying in %s\n", what, err, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 30*time.Second)
	}
}

// Fill completes the rendered Job for submission r: its name, labels,
// task list, throttle, hold and the sweep directory's path.
func Fill(job *batchv1.Job, r scheduler.SubmitRequest) error {
	if len(r.Overrides) > 0 {
		return &scheduler.RefusedError{Msg: fmt.Sprintf("%s are Slurm settings; on Kubernetes put the pod's placement in the spec's kubernetes section", strings.Join(slices.Sorted(maps.Keys(r.Overrides)), ", "))}
	}
	job.Name = JobName(r.JobName)
	sub := kubeid.LabelValue(r.JobName)
	for _, l := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
		if l != nil {
			l[kubeid.LabelSubmission] = sub
		}
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[kubeid.AnnotationSubmission] = r.JobName
	pod := &job.Spec.Template.Spec
	if len(pod.Containers) == 0 {
		return fmt.Errorf("%s: the Job has no container", r.Script)
	}
	c := &pod.Containers[0]
	mounted := false
	for _, vm := range c.VolumeMounts {
		if vm.Name == kubeid.VolumeName && (r.Dir == vm.MountPath || strings.HasPrefix(r.Dir, strings.TrimSuffix(vm.MountPath, "/")+"/")) {
			mounted = true
		}
	}
	if !mounted {
		return &scheduler.RefusedError{Msg: fmt.Sprintf("the sweep directory %s is not on the volume the pods mount (kubernetes.volume.path); render it under that path", r.Dir)}
	}
	set := map[string]string{kubeid.EnvSweepDir: r.Dir}
	if r.Array != "" {
		tasks, err := sweep.ParseIndices(r.Array)
		if err != nil {
			return err
		}
		n := int32(len(tasks))
		job.Spec.Completions = ptr.To(n)
		par := n
		if r.Throttle > 0 && int32(r.Throttle) < n {
			par = int32(r.Throttle)
		}
		job.Spec.Parallelism = ptr.To(par)
		job.Annotations[kubeid.AnnotationTasks] = r.Array
		set[kubeid.EnvTasks] = r.Array
		set[kubeid.EnvOffset] = strconv.Itoa(r.Offset)
	}
	for i := range c.Env {
		if v, ok := set[c.Env[i].Name]; ok {
			c.Env[i].Value = v
		}
	}
	if r.Hold {
		// Held: a suspended Job starts no pod until it is resumed
		// (kubectl patch job NAME -p '{"spec":{"suspend":false}}').
		job.Spec.Suspend = ptr.To(true)
	}
	if len(r.Exclude) > 0 {
		if pod.Affinity == nil {
			pod.Affinity = &corev1.Affinity{}
		}
		if pod.Affinity.NodeAffinity == nil {
			pod.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		na := pod.Affinity.NodeAffinity
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
		}
		req := corev1.NodeSelectorRequirement{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: r.Exclude}
		for i := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			t := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
			t.MatchExpressions = append(t.MatchExpressions, req)
		}
	}
	return nil
}

// Submit implements scheduler.Scheduler: it creates the submission's Job.
// A Job of that name already there is this submission's (created before
// a crash, or by a create whose answer was lost): it is adopted.
func (k *Kube) Submit(ctx context.Context, r scheduler.SubmitRequest) (string, error) {
	if k.client == nil {
		// Nothing reached a cluster: the cells stay unsubmitted.
		return "", &scheduler.RefusedError{Msg: k.clientErr.Error()}
	}
	job, err := k.job(r)
	if err != nil {
		return "", err
	}
	ns := cmp.Or(job.Namespace, k.Namespace)
	err = k.call(ctx, "creating Job "+job.Name, func() error {
		job.Namespace = ns
		err := k.client.CreateJob(ctx, job)
		if apierrors.IsAlreadyExists(err) {
			got, gerr := k.client.GetJob(ctx, ns, job.Name)
			if gerr != nil {
				return gerr
			}
			if got.Annotations[kubeid.AnnotationSubmission] != r.JobName {
				return &scheduler.RefusedError{Msg: fmt.Sprintf("Job %s/%s exists and is not submission %s", ns, job.Name, r.JobName)}
			}
			return nil
		}
		if err != nil && !transient(err) {
			return &scheduler.RefusedError{Msg: fmt.Sprintf("the API server refused Job %s/%s: %v", ns, job.Name, err)}
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return job.Name, nil
}

// job is the rendered Job of r, filled in for it.
func (k *Kube) job(r scheduler.SubmitRequest) (*batchv1.Job, error) {
	if r.Object == "" {
		return nil, fmt.Errorf("no Kubernetes Job is rendered for %s: render the spec with scheduler: k8s", r.Script)
	}
	job, err := readObject(r.Dir, r.Object)
	if err != nil {
		return nil, err
	}
	if err := Fill(job, r); err != nil {
		return nil, err
	}
	return job, nil
}

// DryRun implements scheduler.DryRunner: the Job Submit would create, as
// YAML.
func (k *Kube) DryRun(r scheduler.SubmitRequest) (string, error) {
	job, err := k.job(r)
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(job)
	if err != nil {
		return "", err
	}
	return "---\n" + string(b), nil
}

// FindByName implements scheduler.Scheduler: the Job of that submission,
// if the API server has it.
func (k *Kube) FindByName(ctx context.Context, name string, _ time.Time) ([]string, error) {
	var out []string
	err := k.call(ctx, "looking up "+name, func() error {
		got, err := k.client.GetJob(ctx, k.Namespace, JobName(name))
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		if got.Annotations[kubeid.AnnotationSubmission] == name {
			out = []string{got.Name}
		}
		return nil
	})
	return out, err
}

// list returns the sweep's Jobs by name and its pods, in two calls.
func (k *Kube) list(ctx context.Context) (map[string]*batchv1.Job, []corev1.Pod, error) {
	sel := labels.Set{kubeid.LabelSweep: k.Sweep}.String()
	jobs := map[string]*batchv1.Job{}
	var pods []corev1.Pod
	err := k.call(ctx, "listing the sweep's Jobs", func() error {
		l, err := k.client.ListJobs(ctx, k.Namespace, sel)
		if err != nil {
			return err
		}
		for i := range l {
			jobs[l[i].Name] = &l[i]
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	err = k.call(ctx, "listing the sweep's pods", func() error {
		var err error
		pods, err = k.client.ListPods(ctx, k.Namespace, sel)
		return err
	})
	return jobs, pods, err
}

// tasksOf is the task id each completion index of job stands for: its
// task list for an array, -1 (a plain job) otherwise.
func tasksOf(job *batchv1.Job) []int {
	if s := job.Annotations[kubeid.AnnotationTasks]; s != "" {
		if t, err := sweep.ParseIndices(s); err == nil {
			return t
		}
	}
	return []int{-1}
}

func completionIndex(p *corev1.Pod) (int, bool) {
	s := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if s == "" {
		s = p.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}

// Poll implements scheduler.Scheduler: one list of the sweep's Jobs and
// one of its pods answer for every task. A Job the API server no longer
// has answers nothing: its cells' exit markers say how they ended
// (Accounting is false, as for a Slurm without accounting).
func (k *Kube) Poll(ctx context.Context, jobs []scheduler.PollJob) (*scheduler.Poll, error) {
	p := &scheduler.Poll{Tasks: map[string]sweep.TaskState{}}
	if len(jobs) == 0 {
		return p, nil
	}
	all, pods, err := k.list(ctx)
	if err != nil {
		return nil, err
	}
	newest := podsByIndex(pods)
	for _, pj := range jobs {
		job := all[pj.ID]
		if job == nil || job.Annotations[kubeid.AnnotationSubmission] != pj.Name {
			continue
		}
		done, failed := indexSet(job.Status.CompletedIndexes), indexSet(ptr.Deref(job.Status.FailedIndexes, ""))
		for idx, task := range tasksOf(job) {
			key := scheduler.TaskKey(job.Name, task)
			if why, ok := job.Annotations[kubeid.AnnotationBootFailed+strconv.Itoa(idx)]; ok {
				p.Tasks[key] = sweep.TaskState{State: scheduler.StateBootFail, Reason: why, Source: Source}
				continue
			}
			pod := newest[job.Name][idx]
			if pod == nil {
				p.Tasks[key] = noPod(job, done[idx], failed[idx])
				continue
			}
			ts := podState(pod)
			if ts.State == scheduler.StateBootFail {
				// A pod that cannot start its container (its image, its
				// secret) would wait for ever: it is ended, and the cell
				// counts as failed outside the test. The Job keeps why.
				if err := k.endBootFailed(ctx, job, pod, idx, ts.Reason); err != nil {
					return nil, err
				}
			}
			p.Tasks[key] = ts
		}
	}
	return p, nil
}

// endBootFailed records on the Job why index idx could not start, then
// deletes its pod.
func (k *Kube) endBootFailed(ctx context.Context, job *batchv1.Job, pod *corev1.Pod, idx int, why string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		kubeid.AnnotationBootFailed + strconv.Itoa(idx): why}}})
	if err != nil {
		return err
	}
	err = k.call(ctx, "recording the start failure on Job "+job.Name, func() error {
		return k.client.PatchJob(ctx, job.Namespace, job.Name, patch)
	})
	if err != nil {
		return err
	}
	return k.call(ctx, "deleting pod "+pod.Name, func() error {
		return gone(k.client.DeletePod(ctx, pod.Namespace, pod.Name))
	})
}

// gone is err, but nil when the object to delete is already gone.
func gone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// podsByIndex is the newest pod of each completion index, by Job name.
func podsByIndex(pods []corev1.Pod) map[string]map[int]*corev1.Pod {
	out := map[string]map[int]*corev1.Pod{}
	for i := range pods {
		pod := &pods[i]
		name := pod.Labels[batchv1.JobNameLabel]
		idx, ok := completionIndex(pod)
		if name == "" || !ok {
			continue
		}
		if out[name] == nil {
			out[name] = map[int]*corev1.Pod{}
		}
		if old := out[name][idx]; old == nil || old.CreationTimestamp.Before(&pod.CreationTimestamp) {
			out[name][idx] = pod
		}
	}
	return out
}

// noPod is the state of an index of job that has no pod; done and failed
// say whether the Job counts it completed or failed.
func noPod(job *batchv1.Job, done, failed bool) sweep.TaskState {
	ts := sweep.TaskState{State: scheduler.StatePending, Source: Source}
	switch {
	case ptr.Deref(job.Spec.Suspend, false):
		ts.Reason = "held: the Job is suspended"
	case done:
		ts.State = scheduler.StateCompleted
	case failed:
		ts.State, ts.Reason = scheduler.StateFailed, "the Job counts the index as failed and its pod is gone"
	default:
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				ts.State, ts.Reason = scheduler.StateFailed, string(c.Reason)+": "+c.Message
				return ts
			}
		}
		ts.Reason = "waiting for the Job controller to create its pod"
	}
	return ts
}

// indexSet reads a Job's index list ("1,3-5", the --array syntax).
func indexSet(list string) map[int]bool {
	idx, _ := sweep.ParseIndices(list)
	out := make(map[int]bool, len(idx))
	for _, i := range idx {
		out[i] = true
	}
	return out
}

// startFailures are container waiting reasons a pod does not get past by
// itself: kvsweep ends such a pod (BOOT_FAIL, outside the test).
var startFailures = map[string]bool{
	"ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true,
}

// podState maps a pod to kvsweep's states.
func podState(p *corev1.Pod) sweep.TaskState {
	ts := sweep.TaskState{Source: Source, Nodes: p.Spec.NodeName}
	var cs *corev1.ContainerStatus
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == kubeid.ContainerName {
			cs = &p.Status.ContainerStatuses[i]
		}
	}
	if cs != nil {
		if t := cs.State.Terminated; t != nil {
			ts.ExitCode = int(t.ExitCode)
			if !t.StartedAt.IsZero() && !t.FinishedAt.IsZero() {
				ts.Elapsed = scheduler.FormatElapsed(t.FinishedAt.Sub(t.StartedAt.Time))
			}
		} else if r := cs.State.Running; r != nil {
			ts.Elapsed = scheduler.FormatElapsed(time.Since(r.StartedAt.Time))
		}
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		ts.State = scheduler.StateCompleted
		return ts
	case corev1.PodFailed:
		ts.State, ts.Reason = scheduler.StateFailed, p.Status.Reason
		switch {
		case p.Status.Reason == "DeadlineExceeded":
			ts.State, ts.Reason = scheduler.StateTimeout, "DeadlineExceeded: past the topology's time limit"
		case cs != nil && cs.State.Terminated != nil && cs.State.Terminated.Reason == "OOMKilled":
			ts.State, ts.Reason = scheduler.StateOOM, "OOMKilled"
		case p.Status.Reason == "Evicted" || p.Status.Reason == "Preempting" || hasCondition(p, corev1.DisruptionTarget):
			ts.State = scheduler.StatePreempted
			ts.Reason = strings.TrimSpace(p.Status.Reason + " " + p.Status.Message)
		case p.Status.Reason == "NodeLost" || p.Status.Reason == "Terminated" && p.Spec.NodeName != "":
			ts.State = scheduler.StateNodeFail
		}
		if cs != nil && cs.State.Terminated != nil && ts.Reason == "" {
			ts.Reason = cs.State.Terminated.Reason
		}
		return ts
	}
	if p.DeletionTimestamp != nil {
		ts.State, ts.Reason = scheduler.StateCancelled, "the pod is being deleted"
		return ts
	}
	if cs != nil && cs.State.Waiting != nil {
		w := cs.State.Waiting
		if startFailures[w.Reason] {
			ts.State, ts.Reason = scheduler.StateBootFail, strings.TrimSpace(w.Reason+": "+w.Message)
			return ts
		}
		if p.Status.Phase == corev1.PodPending {
			ts.State, ts.Reason = scheduler.StatePending, w.Reason
			return ts
		}
	}
	if p.Status.Phase == corev1.PodRunning {
		ts.State = scheduler.StateRunning
		return ts
	}
	ts.State = scheduler.StatePending
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			ts.Reason = strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return ts
}

func hasCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Cancel implements scheduler.Scheduler. A Job all of whose tasks are
// targets is deleted with its pods; a single task of a larger Job has its
// pod deleted (its index then fails and is not retried). The tasks are
// recorded as CANCELLED in observed.json, which outlives the Job.
func (k *Kube) Cancel(ctx context.Context, targets []string) error {
	byJob := map[string][]int{}
	for _, t := range targets {
		name, task, ok := strings.Cut(t, "_")
		n := -1
		if ok {
			var err error
			if n, err = strconv.Atoi(task); err != nil {
				return fmt.Errorf("cancel: %q is not a task of a Kubernetes Job", t)
			}
		}
		byJob[name] = append(byJob[name], n)
	}
	all, pods, err := k.list(ctx)
	if err != nil {
		return err
	}
	newest := podsByIndex(pods)
	var errs []error
	cancelled := map[string]sweep.TaskState{}
	for _, name := range slices.Sorted(maps.Keys(byJob)) {
		job := all[name]
		if job == nil {
			continue
		}
		want := byJob[name]
		tasks := tasksOf(job)
		byIdx := newest[name]
		done, failed := indexSet(job.Status.CompletedIndexes), indexSet(ptr.Deref(job.Status.FailedIndexes, ""))
		// The whole Job goes when every task of it that has not ended is
		// a target; a task with no pod yet cannot be cancelled alone.
		whole := true
		var noPodYet []string
		for idx, t := range tasks {
			targeted := slices.Contains(want, t)
			if !done[idx] && !failed[idx] && !targeted {
				whole = false
			}
			if targeted && byIdx[idx] == nil {
				noPodYet = append(noPodYet, scheduler.TaskKey(name, t))
			}
		}
		if !whole && len(noPodYet) > 0 {
			errs = append(errs, fmt.Errorf("%s: no pod yet, and the other cells of its Job are still running or waiting: cancel them together (kvsweep cancel SWEEP), or wait until it starts", strings.Join(noPodYet, ", ")))
			want = slices.DeleteFunc(slices.Clone(want), func(t int) bool { return slices.Contains(noPodYet, scheduler.TaskKey(name, t)) })
		}
		if whole {
			err := k.call(ctx, "deleting Job "+name, func() error {
				return gone(k.client.DeleteJob(ctx, job.Namespace, name))
			})
			if err != nil {
				errs = append(errs, err)
				continue
			}
		}
		// The pods go now, not when the garbage collector gets to them:
		// every pod of a whole Job (a two-node cell's second pod too).
		for idx, pod := range byIdx {
			if !whole && (idx >= len(tasks) || !slices.Contains(want, tasks[idx])) {
				continue
			}
			err := k.call(ctx, "deleting pod "+pod.Name, func() error {
				return gone(k.client.DeletePod(ctx, pod.Namespace, pod.Name))
			})
			if err != nil {
				errs = append(errs, err)
			}
		}
		for _, t := range want {
			cancelled[scheduler.TaskKey(name, t)] = sweep.TaskState{State: scheduler.StateCancelled, Source: Source, Reason: "kvsweep cancel deleted it"}
		}
	}
	if len(cancelled) > 0 {
		seen, _ := sweep.ReadObserved(k.Dir)
		if seen == nil {
			seen = sweep.Observed{}
		}
		for key, ts := range cancelled {
			if old, ok := seen[key]; !ok || !scheduler.Terminal(old.State) {
				seen[key] = ts
			}
		}
		if err := sweep.WriteObserved(k.Dir, seen); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Clean implements scheduler.Cleaner: every Job and pod of the sweep is
// deleted, ended or not.
func (k *Kube) Clean(ctx context.Context) error {
	sel := labels.Set{kubeid.LabelSweep: k.Sweep}.String()
	err := k.call(ctx, "deleting the sweep's Jobs", func() error {
		return k.client.DeleteJobs(ctx, k.Namespace, sel)
	})
	if err != nil {
		return err
	}
	return k.call(ctx, "deleting the sweep's pods", func() error {
		return k.client.DeletePods(ctx, k.Namespace, sel)
	})
}
