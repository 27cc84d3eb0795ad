// Package k8s runs a rendered sweep on Kubernetes (scheduler k8s): it
// implements scheduler.Scheduler with client-go over the Jobs that package
// render/kubejob rendered into the sweep directory.
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
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"

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
	Calls atomic.Int64
	// PageSize is the most objects one page of a list holds (default 500).
	PageSize int64
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
	k.client, k.clientErr = connect(cfg.KubeQPS, cfg.KubeBurst)
	return k, nil
}

// connect returns a client of the cluster kubectl would use, within the
// rate limit qps and burst (0: 50 and 100).
func connect(qps float32, burst int) (api, error) {
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w (KUBECONFIG names the cluster's kubeconfig, as for kubectl)", err)
	}
	// One poll is two list calls (more pages for a large sweep); submits
	// of many Jobs should not wait on client-go's default 5 per second,
	// and the user may set what their API server allows.
	rc.QPS, rc.Burst = cmp.Or(qps, 50), cmp.Or(burst, 100)
	rc.UserAgent = "kvsweep"
	return newREST(rc)
}

// Requests is how many HTTP requests the client sent the API server:
// Calls counts API calls, each of which may be several pages (or, inside
// client-go, retries of a 429 after its Retry-After).
func (k *Kube) Requests() int64 {
	if a, ok := k.client.(*restAPI); ok {
		return a.requests.Load()
	}
	return 0
}

// SubmitConcurrency is how many Jobs one submit creates at once: a
// sweep of several topologies is several Jobs, each create a round trip,
// within the client's rate limit (--kube-qps, --kube-burst).
func (k *Kube) SubmitConcurrency() int { return 4 }

// Name implements scheduler.Scheduler.
func (k *Kube) Name() string { return "k8s" }

// MaxArraySize implements scheduler.Scheduler: an Indexed Job holds up to
// 100,000 completions. It asks the cluster nothing (submit --dry-run
// relies on that).
func (k *Kube) MaxArraySize(context.Context) (int, error) { return 100000, nil }

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
// exponential backoff (1 s, 2 s ... 30 s) until the deadline; when the
// server says how long to wait (Retry-After), that long. client-go has
// already honoured the server's Retry-After of a 429 a few times inside
// the call; this is what comes after.
func (k *Kube) call(ctx context.Context, what string, f func() error) error {
	deadline := cmp.Or(k.Deadline, 10*time.Minute)
	end := time.Now().Add(deadline)
	wait := time.Second
	if k.client == nil {
		return fmt.Errorf("%s: %w", what, k.clientErr)
	}
	for try := 1; ; try++ {
		k.Calls.Add(1)
		err := f()
		if !transient(err) {
			return err
		}
		pause := wait
		if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
			// The server said when (Retry-After of a 429 or 503): that
			// long, not our guess.
			pause = min(time.Duration(s)*time.Second, time.Minute)
		}
		if time.Now().Add(pause).After(end) {
			return fmt.Errorf("%s: %w (still failing after %d tries over %s; raise --retry-deadline to wait longer)", what, err, try, deadline)
		}
		if k.Log != nil {
			fmt.Fprintf(k.Log, "kvsweep: %s: %v; retrying in %s\n", what, err, pause)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		wait = min(wait*2, 30*time.Second)
	}
}
