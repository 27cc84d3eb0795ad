package k8s

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

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
