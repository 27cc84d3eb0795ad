package k8s

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kvsweep/kvsweep/internal/kubeid"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// pageSize is PageSize, or 500.
func (k *Kube) pageSize() int64 { return cmp.Or(k.PageSize, 500) }

// list returns the sweep's Jobs by name and its pods, in two calls (of
// pages of PageSize objects, so no answer grows with the sweep).
func (k *Kube) list(ctx context.Context) (map[string]*batchv1.Job, []corev1.Pod, error) {
	sel := labels.Set{kubeid.LabelSweep: k.Sweep}.String()
	jobs := map[string]*batchv1.Job{}
	var pods []corev1.Pod
	err := k.call(ctx, "listing the sweep's Jobs", func() error {
		l, err := k.client.ListJobs(ctx, k.Namespace, sel, k.pageSize())
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
		pods, err = k.client.ListPods(ctx, k.Namespace, sel, k.pageSize())
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
