package k8s

import (
	"context"
	"encoding/json"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// memAPI is an in-memory API server for the unit tests of error paths and
// of the mapping (the real one runs in e2e). fail holds errors to return,
// in order, from the named method before it works.
type memAPI struct {
	jobs map[string]*batchv1.Job
	pods map[string]*corev1.Pod
	fail map[string][]error
}

func newMem(jobs []*batchv1.Job, pods []*corev1.Pod) *memAPI {
	m := &memAPI{jobs: map[string]*batchv1.Job{}, pods: map[string]*corev1.Pod{}, fail: map[string][]error{}}
	for _, j := range jobs {
		m.jobs[j.Name] = j.DeepCopy()
	}
	for _, p := range pods {
		m.pods[p.Name] = p.DeepCopy()
	}
	return m
}

func (m *memAPI) failing(op string) error {
	if errs := m.fail[op]; len(errs) > 0 {
		m.fail[op] = errs[1:]
		return errs[0]
	}
	return nil
}

var (
	jobsGR = schema.GroupResource{Group: "batch", Resource: "jobs"}
	podsGR = schema.GroupResource{Resource: "pods"}
)

func matches(sel string, l map[string]string) bool {
	s, err := labels.Parse(sel)
	return err == nil && s.Matches(labels.Set(l))
}

func (m *memAPI) CreateJob(_ context.Context, job *batchv1.Job) error {
	if err := m.failing("CreateJob"); err != nil {
		return err
	}
	if _, ok := m.jobs[job.Name]; ok {
		return apierrors.NewAlreadyExists(jobsGR, job.Name)
	}
	m.jobs[job.Name] = job.DeepCopy()
	return nil
}

func (m *memAPI) GetJob(_ context.Context, _, name string) (*batchv1.Job, error) {
	if err := m.failing("GetJob"); err != nil {
		return nil, err
	}
	j, ok := m.jobs[name]
	if !ok {
		return nil, apierrors.NewNotFound(jobsGR, name)
	}
	return j.DeepCopy(), nil
}

func (m *memAPI) ListJobs(_ context.Context, _, sel string, _ int64) ([]batchv1.Job, error) {
	if err := m.failing("ListJobs"); err != nil {
		return nil, err
	}
	var out []batchv1.Job
	for _, j := range m.jobs {
		if matches(sel, j.Labels) {
			out = append(out, *j.DeepCopy())
		}
	}
	return out, nil
}

func (m *memAPI) ListPods(_ context.Context, _, sel string, _ int64) ([]corev1.Pod, error) {
	if err := m.failing("ListPods"); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range m.pods {
		if matches(sel, p.Labels) {
			out = append(out, *p.DeepCopy())
		}
	}
	return out, nil
}

func (m *memAPI) PatchJob(_ context.Context, _, name string, patch []byte) error {
	if err := m.failing("PatchJob"); err != nil {
		return err
	}
	j, ok := m.jobs[name]
	if !ok {
		return apierrors.NewNotFound(jobsGR, name)
	}
	var p struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	for k, v := range p.Metadata.Annotations {
		j.Annotations[k] = v
	}
	return nil
}

func (m *memAPI) DeleteJob(_ context.Context, _, name string) error {
	if _, ok := m.jobs[name]; !ok {
		return apierrors.NewNotFound(jobsGR, name)
	}
	delete(m.jobs, name)
	return nil
}

func (m *memAPI) DeletePod(_ context.Context, _, name string) error {
	if _, ok := m.pods[name]; !ok {
		return apierrors.NewNotFound(podsGR, name)
	}
	delete(m.pods, name)
	return nil
}

func (m *memAPI) DeleteJobs(_ context.Context, _, sel string) error {
	for n, j := range m.jobs {
		if matches(sel, j.Labels) {
			delete(m.jobs, n)
		}
	}
	return nil
}

func (m *memAPI) DeletePods(_ context.Context, _, sel string) error {
	for n, p := range m.pods {
		if matches(sel, p.Labels) {
			delete(m.pods, n)
		}
	}
	return nil
}
