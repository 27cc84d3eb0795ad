package render

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/kvsweep/kvsweep/internal/shq"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/templates"
)

// ScriptData is what job.sbatch.tmpl is executed with.
type ScriptData struct {
	SweepID   string
	JobName   string // the Slurm job name: sweep id and job, sanitized
	Comment   string // the Slurm comment: JobTag
	Job       sweep.Job
	Cluster   matrix.Cluster
	Container matrix.Container
	EnvPass   []string
	EnvSet    []EnvVar
	// EnvNames are the variables runtimes that pass names explicitly
	// (enroot, docker) hand into the container: the job's identity
	// (JobEnv), then EnvPass and the names of EnvSet.
	EnvNames []string
	Workers  int
	// HeadWorkers and RemoteWorkers are the workers (by index) on each
	// node of a two-node job; AllWorkers every worker of a one-node job.
	HeadWorkers, RemoteWorkers, AllWorkers []int
	// GPUs is the two-node placement's --gpus ("0,0,0"), "" for none.
	GPUs   string
	Image  string   // the image the jobs run (the manifest's: its tag resolved to a digest)
	Expect []EnvVar // component and commit the image must record, sorted
	// Adapter is the result adapter's argv (harness.result_adapter).
	Adapter []string
	// Telemetry is what the job scrapes beside the harness (nil: none).
	Telemetry *sweep.Telemetry
	// Profile is what the job profiles (nil: nothing).
	Profile *sweep.ProfilePlan
	// Etcd and NATS: the job starts them for the workers before the
	// harness (the spec's services, or the engine's).
	Etcd, NATS bool
	// K8s: the script runs in the pods of a Kubernetes Job (scheduler
	// k8s), whose container is the image: Container.Runtime is "k8s".
	K8s bool
	// TwoPods: a two-node cell on Kubernetes, whose Job's two pods both
	// run the script (index 0 the head, 1 the second node).
	TwoPods bool
}

// JobEnv are the variables that tell a harness which sweep, cell and job
// it runs in; every runtime passes them into the container.
var JobEnv = []string{"KVSWEEP_SWEEP_ID", "KVSWEEP_SWEEP_DIR", "KVSWEEP_CELL_ID", "KVSWEEP_CELL_DIR",
	"KVSWEEP_SERVICES_DIR", "KVCR_SERVICE_INDEX", "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID",
	"SLURM_JOB_NODELIST", "SLURM_JOB_PARTITION"}

// EnvVar is a literal environment value of the spec.
type EnvVar struct{ Name, Value string }

// RenderScript executes the job template for one job.
func RenderScript(t *template.Template, spec *matrix.Spec, m *sweep.Manifest, j sweep.Job) ([]byte, error) {
	d := ScriptData{
		SweepID:   m.SweepID,
		JobName:   sweep.JobName(m.SweepID, j.Name),
		Comment:   sweep.JobTag(m.SweepID, j.Name),
		Job:       j,
		Cluster:   spec.Cluster,
		Container: spec.Container,
		Workers:   2,
		K8s:       spec.Scheduler == "k8s",
	}
	if d.K8s {
		d.Container.Runtime = "k8s"
		d.TwoPods = j.Kind == "two-node"
	}
	env := spec.Env
	if e := spec.Engines[j.Engine]; j.Engine != "" && e != nil {
		env = mergeEnv(spec.Env, e.Env)
	}
	d.EnvPass = env.Pass
	d.EnvNames = append(append(d.EnvNames, JobEnv...), env.Pass...)
	for _, k := range env.SetKeys {
		d.EnvSet = append(d.EnvSet, EnvVar{k, env.Set[k]})
		d.EnvNames = append(d.EnvNames, k)
	}
	d.Image = m.ImageOf(j.Name)
	d.Adapter = m.ResultAdapter
	d.Telemetry = m.Telemetry
	if d.Profile = m.Profile; d.Profile != nil {
		d.EnvNames = append(d.EnvNames, "KVSWEEP_PROFILE_TOOL", "KVSWEEP_PROFILE_DIR")
	}
	svc := m.ServicesOf(j.Name)
	d.Etcd, d.NATS = slices.Contains(svc, matrix.ServiceEtcd), slices.Contains(svc, matrix.ServiceNATS)
	// The services' addresses reach the harness in the container: runtimes
	// that pass variables by name need the names (a two-node job's etcd
	// too).
	if d.Etcd || j.Kind == "two-node" {
		d.EnvNames = append(d.EnvNames, "ETCD_ENDPOINTS")
	}
	if d.NATS {
		d.EnvNames = append(d.EnvNames, "NATS_SERVER")
	}
	expect := m.Expect
	if j.Expect != nil {
		expect = j.Expect
	}
	for _, k := range slices.Sorted(maps.Keys(expect)) {
		d.Expect = append(d.Expect, EnvVar{k, expect[k]})
	}
	if t := spec.Topologies[j.Topology]; t != nil {
		d.Workers = t.Workers
		d.HeadWorkers, d.RemoteWorkers = t.Placement.WorkersOn("head"), t.Placement.WorkersOn("remote")
		if t.Placement != nil && t.Placement.GPUs != nil {
			d.GPUs = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(t.Placement.GPUs)), ","), "[]")
		}
	}
	for i := range d.Workers {
		d.AllWorkers = append(d.AllWorkers, i)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, templates.JobTemplate, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// mergeEnv is the spec's environment with an engine's added (the engine's
// value wins for a name both set).
func mergeEnv(base, extra matrix.Env) matrix.Env {
	out := matrix.Env{Set: map[string]string{}}
	out.Pass = append(append(out.Pass, base.Pass...), extra.Pass...)
	out.Pass = slices.Compact(slices.Sorted(slices.Values(out.Pass)))
	maps.Copy(out.Set, base.Set)
	maps.Copy(out.Set, extra.Set)
	out.SetKeys = slices.Sorted(maps.Keys(out.Set))
	return out
}

func loadTemplates(dir string) (*template.Template, error) {
	var t *template.Template
	funcs := template.FuncMap{
		"shq":    shq.Quote,
		"sbatch": sbatchValue,
		"sub":    func(a, b int) int { return a - b },
		"isAbs":  filepath.IsAbs,
		// include executes a named template chosen at run time (text/template's
		// own {{template}} takes constant names only).
		"include": func(name string, data any) (string, error) {
			if t.Lookup(name) == nil {
				return "", fmt.Errorf("no template %q", name)
			}
			var b bytes.Buffer
			err := t.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
	}
	t, err := templates.Load(dir, funcs)
	return t, err
}

// sbatchValue checks a value for an #SBATCH line, which sbatch splits on
// white space unless it is double-quoted.
func sbatchValue(s string) (string, error) {
	if strings.ContainsAny(s, "\"\r\n") {
		return "", fmt.Errorf("value %q cannot be written to an #SBATCH line (contains a quote or line break)", s)
	}
	if strings.ContainsAny(s, " \t") {
		return `"` + s + `"`, nil
	}
	return s, nil
}
