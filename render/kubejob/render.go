// Package kubejob renders the Kubernetes Job of a sweep's job (scheduler
// k8s): the same cells, cell tables and job script as on Slurm, with the
// script run by the pods of an Indexed Job instead of sbatch. It renders
// only; package scheduler/k8s submits and follows what it wrote.
//
// One Job per job of the manifest: an array is an Indexed Job whose
// completion index selects the task from the submission's task list, a
// plain job (one cell, --no-array) a Job of one pod, and a two-node cell a
// Job of two pods (index 0 the head, 1 the second node) that may not share
// a node. What differs per submission (name, task list, throttle, hold,
// the sweep directory's path) is filled in by kvsweep submit; the file is
// everything else, overlays applied, so a golden file shows exactly what a
// cluster is asked to run.
package kubejob

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kvsweep/kvsweep/internal/kubeid"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
)

// MaxOverlaySize bounds an overlay file.
const MaxOverlaySize = 1 << 20

// Options are what the renderer needs besides the spec and manifest.
type Options struct {
	// SpecDir is where overlay paths are relative to.
	SpecDir string
}

// Render returns the Job (YAML) that runs job j of manifest m.
func Render(spec *matrix.Spec, m *sweep.Manifest, j sweep.Job, opts Options) ([]byte, error) {
	k := spec.Kubernetes
	if k == nil {
		return nil, fmt.Errorf("scheduler k8s: the spec has no kubernetes section")
	}
	job, err := build(spec, m, j)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	for _, o := range k.Overlays {
		if js, err = overlay(js, o, opts.SpecDir); err != nil {
			return nil, err
		}
	}
	// The overlaid document is read back into a Job: an overlay that
	// makes it something else (a typo'd field, a wrong type) is refused
	// here, not by the cluster at submit.
	var back batchv1.Job
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		return nil, fmt.Errorf("kubernetes.overlays: the Job of %s is no longer a Job: %v", j.Name, err)
	}
	out, err := yaml.JSONToYAML(js)
	if err != nil {
		return nil, err
	}
	return append([]byte(fmt.Sprintf("# kvsweep job %s of sweep %s: the Kubernetes Job that runs %s.\n# kvsweep submit fills in its name, task list, throttle and the sweep directory.\n", j.Name, m.SweepID, j.Script)), out...), nil
}

func build(spec *matrix.Spec, m *sweep.Manifest, j sweep.Job) (*batchv1.Job, error) {
	k := spec.Kubernetes
	labels := jobLabels(m, j)
	env, err := podEnv(spec, j)
	if err != nil {
		return nil, err
	}
	pod, err := podSpec(k, m, j, env)
	if err != nil {
		return nil, err
	}
	pod.SecurityContext = runAs(spec.Container.User)
	count := int32(j.Count)
	if j.Kind == "two-node" {
		// Two pods, never on one node: index 0 is the head.
		count = 2
		pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{kubeid.LabelJob: labels[kubeid.LabelJob]}},
			}}}}
	}
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   k.Namespace,
			Labels:      labels,
			Annotations: map[string]string{kubeid.AnnotationJob: j.Name},
		},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To(count),
			Parallelism:    ptr.To(count),
			// kvsweep decides what runs again (resubmit, retry.infra): a
			// failed index is not retried, and never stops the others.
			BackoffLimitPerIndex: ptr.To[int32](0),
			// A pod is replaced only once it has fully ended, so a cell
			// never runs twice at once.
			PodReplacementPolicy: ptr.To(batchv1.Failed),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod,
			},
		},
	}
	return job, nil
}

// jobLabels are the labels of a job's Job and pods: kvsweep's, the sweep's
// and the job's, and the cell's for a Job of one cell.
func jobLabels(m *sweep.Manifest, j sweep.Job) map[string]string {
	labels := map[string]string{kubeid.LabelManaged: "kvsweep", kubeid.LabelSweep: kubeid.LabelValue(m.SweepID), kubeid.LabelJob: kubeid.LabelValue(j.Name)}
	if !j.Array {
		// A Job of one cell names it; an array's pods are told apart by
		// their completion index through the Job's task list.
		for _, c := range m.Cells {
			if c.Job == j.Name {
				labels[kubeid.LabelCell] = kubeid.LabelValue(c.ID)
			}
		}
	}
	return labels
}

// podEnv is the container's environment: what a submission fills in, the
// pod's node and address, and the spec's secrets by name. A name env.pass
// forwards must be one of them: no pod sees the environment kvsweep
// submit runs in.
func podEnv(spec *matrix.Spec, j sweep.Job) ([]corev1.EnvVar, error) {
	k := spec.Kubernetes
	env := []corev1.EnvVar{
		{Name: kubeid.EnvSweepDir},
		{Name: kubeid.EnvJob, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['batch.kubernetes.io/job-name']"}}},
		{Name: "KVSWEEP_NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "KVSWEEP_POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	}
	if j.Array {
		env = append(env, corev1.EnvVar{Name: kubeid.EnvTasks}, corev1.EnvVar{Name: kubeid.EnvOffset, Value: "0"})
	}
	// Secrets by name.
	secret := map[string]matrix.SecretEnv{}
	for _, s := range k.Secrets {
		secret[s.Name] = s
		env = append(env, corev1.EnvVar{Name: s.Name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s.Secret}, Key: s.Key}}})
	}
	pass := spec.Env.Pass
	if e := spec.Engines[j.Engine]; j.Engine != "" && e != nil {
		pass = append(slices.Clone(pass), e.Env.Pass...)
	}
	for _, name := range pass {
		if _, ok := secret[name]; !ok {
			return nil, fmt.Errorf("env.pass %s: the pods of a Kubernetes Job do not see the environment kvsweep submit runs in; name the secret that holds it under kubernetes.secrets (%s: SECRET/KEY)", name, name)
		}
	}
	return env, nil
}

// podSpec is the pod of a job: its one container running the job's script
// from the sweep volume, the time limit, the spec's placement and the
// sweep volume (a claim, or a host path).
func podSpec(k *matrix.Kubernetes, m *sweep.Manifest, j sweep.Job, env []corev1.EnvVar) (corev1.PodSpec, error) {
	res, err := resources(j.Res)
	if err != nil {
		return corev1.PodSpec{}, fmt.Errorf("job %s: %w", j.Name, err)
	}
	pod := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		// The time limit: past it the pod is stopped (TERM, then KILL
		// after the grace period) and ends DeadlineExceeded: TIMEOUT.
		ActiveDeadlineSeconds:         ptr.To(j.Res.TimeSeconds),
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		NodeSelector:                  k.NodeSelector,
		ServiceAccountName:            k.ServiceAccount,
		Containers: []corev1.Container{{
			Name:  kubeid.ContainerName,
			Image: m.ImageOf(j.Name),
			// Kubernetes expands $(VAR) from the container's environment:
			// no shell reads the path.
			Command:      []string{"/bin/bash", "$(" + kubeid.EnvSweepDir + ")/" + j.Script},
			Env:          env,
			Resources:    res,
			VolumeMounts: []corev1.VolumeMount{{Name: kubeid.VolumeName, MountPath: k.Path}},
		}},
	}
	if k.RuntimeClass != "" {
		pod.RuntimeClassName = ptr.To(k.RuntimeClass)
	}
	for _, t := range k.Tolerations {
		pod.Tolerations = append(pod.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator),
			Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	if k.Claim != "" {
		pod.Volumes = []corev1.Volume{{Name: kubeid.VolumeName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: k.Claim}}}}
	} else {
		pod.Volumes = []corev1.Volume{{Name: kubeid.VolumeName, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: k.HostPath, Type: ptr.To(corev1.HostPathDirectory)}}}}
	}
	return pod, nil
}

// runAs is the pod's user for container.user: root or UID[:GID] set it,
// anything else leaves the image's (a pod has no submitting user).
func runAs(user string) *corev1.PodSecurityContext {
	if user == matrix.UserRoot {
		return &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)}
	}
	uid, gid, hasGID := strings.Cut(user, ":")
	u, err := strconv.ParseInt(uid, 10, 64)
	if err != nil {
		return nil
	}
	sc := &corev1.PodSecurityContext{RunAsUser: ptr.To(u)}
	if g, err := strconv.ParseInt(gid, 10, 64); hasGID && err == nil {
		sc.RunAsGroup = ptr.To(g)
	}
	return sc
}

// resources converts Slurm's resource request to the container's: GPUs
// as nvidia.com/gpu limits, CPUs and memory as requests and limits.
func resources(r sweep.Resources) (corev1.ResourceRequirements, error) {
	rl := corev1.ResourceList{}
	if r.CPUsPerTask > 0 {
		rl[corev1.ResourceCPU] = *resource.NewQuantity(int64(r.CPUsPerTask), resource.DecimalSI)
	}
	if r.Mem != "" {
		q, err := memory(r.Mem)
		if err != nil {
			return corev1.ResourceRequirements{}, err
		}
		rl[corev1.ResourceMemory] = q
	}
	if r.GPUsPerNode > 0 {
		rl["nvidia.com/gpu"] = *resource.NewQuantity(int64(r.GPUsPerNode), resource.DecimalSI)
	}
	if len(rl) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	return corev1.ResourceRequirements{Requests: rl.DeepCopy(), Limits: rl}, nil
}

var memRE = regexp.MustCompile(`^([0-9]+)([KMGT]?)$`)

// memory converts Slurm's --mem (megabytes unless a K, M, G or T suffix,
// all binary) to a quantity.
func memory(s string) (resource.Quantity, error) {
	sub := memRE.FindStringSubmatch(strings.ToUpper(s))
	if sub == nil {
		return resource.Quantity{}, fmt.Errorf("mem %q: expected a number of megabytes with an optional K, M, G or T suffix", s)
	}
	n, err := strconv.ParseInt(sub[1], 10, 64)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("mem %q: %v", s, err)
	}
	unit := map[string]string{"": "Mi", "K": "Ki", "M": "Mi", "G": "Gi", "T": "Ti"}[sub[2]]
	return resource.ParseQuantity(strconv.FormatInt(n, 10) + unit)
}

// overlay applies the patch file name (relative to dir) to the Job js: a
// list of operations is an RFC 6902 JSON patch, an object a strategic
// merge patch.
func overlay(js []byte, name, dir string) ([]byte, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, name)
	}
	// Bounded, regular files only: a FIFO would block the render for ever.
	b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), MaxOverlaySize)
	if err != nil {
		return nil, fmt.Errorf("kubernetes.overlays: open %s: %w", path, err)
	}
	pj, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("kubernetes.overlays: %s: %v", name, err)
	}
	pj = bytes.TrimSpace(pj)
	switch {
	case bytes.HasPrefix(pj, []byte("[")):
		p, err := jsonpatch.DecodePatch(pj)
		if err != nil {
			return nil, fmt.Errorf("kubernetes.overlays: %s: not a JSON patch: %v", name, err)
		}
		out, err := p.Apply(js)
		if err != nil {
			return nil, fmt.Errorf("kubernetes.overlays: %s: %v", name, err)
		}
		return out, nil
	case bytes.HasPrefix(pj, []byte("{")):
		out, err := strategicpatch.StrategicMergePatch(js, pj, batchv1.Job{})
		if err != nil {
			return nil, fmt.Errorf("kubernetes.overlays: %s: %v", name, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("kubernetes.overlays: %s: expected a strategic-merge patch (an object) or a JSON patch (a list of operations)", name)
}
