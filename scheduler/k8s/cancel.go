package k8s

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kvsweep/kvsweep/internal/kubeid"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// Cancel implements scheduler.Scheduler. A Job all of whose tasks are
// targets is deleted with its pods; a single task of a larger Job has its
// pod deleted (its index then fails and is not retried). The tasks are
// recorded as CANCELLED in observed.json, which outlives the Job.
func (k *Kube) Cancel(ctx context.Context, targets []string) error {
	byJob, err := targetsByJob(targets)
	if err != nil {
		return err
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
		want, jobErrs := k.cancelJob(ctx, job, byJob[name], newest[name])
		errs = append(errs, jobErrs...)
		for _, t := range want {
			cancelled[scheduler.TaskKey(name, t)] = sweep.TaskState{State: scheduler.StateCancelled, Source: Source, Reason: "kvsweep cancel deleted it"}
		}
	}
	if len(cancelled) > 0 {
		if err := k.recordCancelled(cancelled); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// targetsByJob reads cancel's targets, JOB or JOB_TASK, into the tasks of
// each Job (-1 for the whole Job).
func targetsByJob(targets []string) (map[string][]int, error) {
	byJob := map[string][]int{}
	for _, t := range targets {
		name, task, ok := strings.Cut(t, "_")
		n := -1
		if ok {
			var err error
			if n, err = strconv.Atoi(task); err != nil {
				return nil, fmt.Errorf("cancel: %q is not a task of a Kubernetes Job", t)
			}
		}
		byJob[name] = append(byJob[name], n)
	}
	return byJob, nil
}

// cancelJob deletes the Job when every task of it that has not ended is
// a target, and the targets' pods; it returns the tasks it cancelled. A
// task with no pod yet cannot be cancelled alone: it is left, and said.
func (k *Kube) cancelJob(ctx context.Context, job *batchv1.Job, want []int, byIdx map[int]*corev1.Pod) ([]int, []error) {
	name := job.Name
	tasks := tasksOf(job)
	done, failed := indexSet(job.Status.CompletedIndexes), indexSet(ptr.Deref(job.Status.FailedIndexes, ""))
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
	var errs []error
	if !whole && len(noPodYet) > 0 {
		errs = append(errs, fmt.Errorf("%s: no pod yet, and the other cells of its Job are still running or waiting: cancel them together (kvsweep cancel SWEEP), or wait until it starts", strings.Join(noPodYet, ", ")))
		want = slices.DeleteFunc(slices.Clone(want), func(t int) bool { return slices.Contains(noPodYet, scheduler.TaskKey(name, t)) })
	}
	if whole {
		err := k.call(ctx, "deleting Job "+name, func() error {
			return gone(k.client.DeleteJob(ctx, job.Namespace, name))
		})
		if err != nil {
			return nil, append(errs, err)
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
	return want, errs
}

// recordCancelled keeps the cancelled tasks' states in observed.json, as
// the poll no longer sees deleted pods; a task already ended keeps its end.
func (k *Kube) recordCancelled(cancelled map[string]sweep.TaskState) error {
	seen, _ := sweep.ReadObserved(k.Dir)
	if seen == nil {
		seen = sweep.Observed{}
	}
	for key, ts := range cancelled {
		if old, ok := seen[key]; !ok || !scheduler.Terminal(old.State) {
			seen[key] = ts
		}
	}
	return sweep.WriteObserved(k.Dir, seen)
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
