package k8s

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// api is what the scheduler asks of the API server: Jobs and pods, by
// name or by label selector.
type api interface {
	CreateJob(ctx context.Context, job *batchv1.Job) error
	GetJob(ctx context.Context, ns, name string) (*batchv1.Job, error)
	// ListJobs and ListPods list by selector in pages of at most page
	// objects (0: all at once).
	ListJobs(ctx context.Context, ns, selector string, page int64) ([]batchv1.Job, error)
	ListPods(ctx context.Context, ns, selector string, page int64) ([]corev1.Pod, error)
	// PatchJob applies a JSON merge patch.
	PatchJob(ctx context.Context, ns, name string, patch []byte) error
	// DeleteJob deletes a Job and, in the background, its pods.
	DeleteJob(ctx context.Context, ns, name string) error
	DeletePod(ctx context.Context, ns, name string) error
	DeleteJobs(ctx context.Context, ns, selector string) error
	DeletePods(ctx context.Context, ns, selector string) error
}

// The two API groups kvsweep uses, and nothing else: client-go's
// clientset registers every group of Kubernetes at start-up, which every
// kvsweep command would pay for. They are registered when first needed:
// at start-up they cost every command 1.2 ms, also those that never talk
// to Kubernetes.
var codecs = sync.OnceValues(func() (serializer.CodecFactory, runtime.ParameterCodec) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{batchv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(scheme), runtime.NewParameterCodec(scheme)
})

// restAPI is api over client-go's REST clients of the core and batch
// groups, sharing one HTTP client; requests counts the HTTP requests it
// sent (pages and client-go's own retries included).
type restAPI struct {
	core, batch *rest.RESTClient
	requests    atomic.Int64
}

func newREST(rc *rest.Config) (*restAPI, error) {
	a := &restAPI{}
	rc = rest.CopyConfig(rc)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counting{rt, &a.requests} })
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	client := func(gv schema.GroupVersion, path string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(rc)
		c.GroupVersion, c.APIPath = &gv, path
		cf, _ := codecs()
		c.NegotiatedSerializer = cf.WithoutConversion()
		return rest.RESTClientForConfigAndClient(c, hc)
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	batch, err := client(batchv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	a.core, a.batch = core, batch
	return a, nil
}

// counting counts the requests of a round tripper.
type counting struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

func selected(sel string) *metav1.ListOptions { return &metav1.ListOptions{LabelSelector: sel} }

// parameters encodes query options.
func parameters() runtime.ParameterCodec { _, p := codecs(); return p }

var background = metav1.DeletePropagationBackground

func (a *restAPI) CreateJob(ctx context.Context, job *batchv1.Job) error {
	return a.batch.Post().Namespace(job.Namespace).Resource("jobs").Body(job).Do(ctx).Error()
}

func (a *restAPI) GetJob(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	var job batchv1.Job
	err := a.batch.Get().Namespace(ns).Resource("jobs").Name(name).Do(ctx).Into(&job)
	return &job, err
}

func (a *restAPI) ListJobs(ctx context.Context, ns, sel string, size int64) ([]batchv1.Job, error) {
	var out []batchv1.Job
	err := paged(func(cont string) (string, error) {
		var l batchv1.JobList
		err := a.batch.Get().Namespace(ns).Resource("jobs").VersionedParams(page(sel, cont, size), parameters()).Do(ctx).Into(&l)
		out = append(out, l.Items...)
		return l.Continue, err
	}, func() { out = out[:0] })
	return out, err
}

func (a *restAPI) ListPods(ctx context.Context, ns, sel string, size int64) ([]corev1.Pod, error) {
	var out []corev1.Pod
	err := paged(func(cont string) (string, error) {
		var l corev1.PodList
		err := a.core.Get().Namespace(ns).Resource("pods").VersionedParams(page(sel, cont, size), parameters()).Do(ctx).Into(&l)
		out = append(out, l.Items...)
		return l.Continue, err
	}, func() { out = out[:0] })
	return out, err
}

// page is the options of one page of a list by selector.
func page(sel, cont string, size int64) *metav1.ListOptions {
	return &metav1.ListOptions{LabelSelector: sel, Limit: size, Continue: cont}
}

// paged calls list for each page, from the first, until the server says
// no more. A continue token that expired (410 Gone: the list took longer
// than the server keeps its snapshot) starts the list again, once, after
// reset drops what was read.
func paged(list func(cont string) (string, error), reset func()) error {
	cont, restarted := "", false
	for {
		next, err := list(cont)
		switch {
		case apierrors.IsResourceExpired(err) && !restarted:
			reset()
			cont, restarted = "", true
			continue
		case err != nil:
			return err
		case next == "":
			return nil
		}
		cont = next
	}
}

func (a *restAPI) PatchJob(ctx context.Context, ns, name string, patch []byte) error {
	return a.batch.Patch(types.MergePatchType).Namespace(ns).Resource("jobs").Name(name).Body(patch).Do(ctx).Error()
}

func (a *restAPI) DeleteJob(ctx context.Context, ns, name string) error {
	return a.batch.Delete().Namespace(ns).Resource("jobs").Name(name).
		Body(&metav1.DeleteOptions{PropagationPolicy: &background}).Do(ctx).Error()
}

func (a *restAPI) DeletePod(ctx context.Context, ns, name string) error {
	return a.core.Delete().Namespace(ns).Resource("pods").Name(name).Body(&metav1.DeleteOptions{}).Do(ctx).Error()
}

func (a *restAPI) DeleteJobs(ctx context.Context, ns, sel string) error {
	return a.batch.Delete().Namespace(ns).Resource("jobs").VersionedParams(selected(sel), parameters()).
		Body(&metav1.DeleteOptions{PropagationPolicy: &background}).Do(ctx).Error()
}

func (a *restAPI) DeletePods(ctx context.Context, ns, sel string) error {
	return a.core.Delete().Namespace(ns).Resource("pods").VersionedParams(selected(sel), parameters()).
		Body(&metav1.DeleteOptions{}).Do(ctx).Error()
}
