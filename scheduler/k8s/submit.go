package k8s

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kvsweep/kvsweep/internal/kubeid"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

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
