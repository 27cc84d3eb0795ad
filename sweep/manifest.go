// Package sweep defines the sweep directory, the unit of work of kvsweep.
//
// A sweep directory holds everything needed to submit, resume, collect and
// report a sweep from any machine:
//
//	spec.yaml              frozen copy of the spec it was rendered from
//	manifest.json          sweep id, jobs and cells (see Manifest)
//	jobs/NAME.sbatch       one script per job: an array over its cell table, or one cell
//	jobs/NAME.cells        the cell table: line i+1 is "ID ARGV AGENT SERVICE" for index i,
//	                       each command line an OFFSET:LENGTH into jobs/NAME.args, or "-"
//	jobs/NAME.args         the command lines of the job's cells, NUL-separated words
//	jobs/NAME.job.yaml     scheduler k8s: the Job the script runs in
//	cells/ID/              created by the job when it runs:
//	cells/ID/slurm-*.out   the job's output
//	cells/ID/exit          exit marker, written on every way out (see ExitMarker)
//	cells/ID/result.json   written by the harness
//	cells/ID/source-revisions.json  the image's record of what it was built from
//	cells/ID/harness-started        when the harness started (none: it never did)
//	cells/ID/attempts/      what earlier attempts of the cell left
//	logs/                  Slurm's own output file of each job (before it knows its cell)
//	state.jsonl            append-only submission journal
//	sweep.id               the sweep id alone, checked by every job script
//	observed.json          terminal states status saw (outlives Slurm's memory)
//	results.json           the collected run (kvsweep collect)
//	bin/kvsweep            the kvsweep two-node jobs run on their nodes
//
// Rendering writes a handful of files per job, never per cell: on shared
// cluster file systems creating many small files is the slow part.
package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
	"github.com/kvsweep/kvsweep/internal/jsonsplit"
)

// SchemaVersion of manifest.json.
const SchemaVersion = 1

// File names inside a sweep directory.
const (
	ManifestFile = "manifest.json"
	SpecFile     = "spec.yaml"
	JournalFile  = "state.jsonl"
	JobsDir      = "jobs"
	CellsDir     = "cells"
	LogsDir      = "logs"
	ExitFile     = "exit"
	ResultFile   = "result.json"
	// IDFile holds the sweep id alone: the job script checks it before it
	// touches anything, so a script run from another directory stops.
	IDFile = "sweep.id"
	// ResultsFile is the collected run (kvsweep collect).
	ResultsFile = "results.json"
	// ObservedFile keeps the terminal states status has seen (see Observed).
	ObservedFile = "observed.json"
	// BinaryPath is where a sweep directory keeps the kvsweep its jobs run.
	BinaryPath = "bin/kvsweep"
	// RevisionsFile is the image's source-revisions.json, copied into the
	// cell directory by the job before the harness starts.
	RevisionsFile = "source-revisions.json"
	// MismatchFile says, one line per component, how the image's record
	// differs from what the spec expects; the job then starts no harness.
	MismatchFile = "provenance-mismatch"
	// PlatformMismatchFile says that the node is not of the image's
	// platform (cluster.platform), naming both; the job then starts no
	// harness. EmulatedFile says the node emulates it (cluster.emulate).
	PlatformMismatchFile = "platform-mismatch"
	EmulatedFile         = "emulated"
	// AdapterLog is the result adapter's output; AdapterFailedFile holds
	// its exit status when it failed.
	AdapterLog        = "adapter.log"
	AdapterFailedFile = "adapter-failed"
	// NoRevisionsFile says why the image's record could not be copied.
	NoRevisionsFile = "provenance-missing"
	// StartedFile is written (a UTC time) in the container right before
	// the harness starts: a job that ends without it failed before the
	// test began, outside the test (image pull, node, scheduler).
	StartedFile = "harness-started"
)

// DefaultMaxArraySize is Slurm's default MaxArraySize (indexes 0..1000):
// render splits a topology's cells into jobs of at most this many.
const DefaultMaxArraySize = 1001

// Manifest describes a rendered sweep. Cells and jobs are listed in the
// order they were planned; a cell keeps its job and index for the life of
// the sweep directory, so a re-render never moves a submitted cell.
type Manifest struct {
	SchemaVersion int    `json:"schema_version"`
	SweepID       string `json:"sweep_id"`
	Name          string `json:"name"`
	Scheduler     string `json:"scheduler"`
	Spec          string `json:"spec"`
	Version       string `json:"kvsweep_version"`
	// Image is the spec's container image, as rendered into the jobs, so
	// collect never re-reads the spec.
	Image string `json:"image,omitempty"`
	// Runtime is the spec's container.runtime: what kvsweep finds and
	// removes later depends on it (docker containers left by killed tasks).
	Runtime string `json:"runtime,omitempty"`
	// Expect is the commit each named component of the image must record;
	// jobs check it before the harness starts.
	Expect map[string]string `json:"expect,omitempty"`
	// Services are what each job starts for the workers before the
	// harness (etcd, nats), from the spec's services.
	Services []string `json:"services,omitempty"`
	// Validity is what a PASS must show to count, from the spec.
	Validity *Validity `json:"validity,omitempty"`
	// RetryInfra is how many times a cell that failed outside the test is
	// submitted again while the sweep is followed (spec retry.infra).
	RetryInfra int `json:"retry_infra,omitempty"`
	// QOS and Account are the spec's cluster.qos and cluster.account,
	// whose submit limits bound how many cells may be queued at once;
	// MaxQueued is the spec's own bound (cluster.max_queued).
	QOS       string `json:"qos,omitempty"`
	Account   string `json:"account,omitempty"`
	MaxQueued int    `json:"max_queued,omitempty"`
	// ResultAdapter is the argv of the command the job runs after the
	// harness to write result.json v1 (cell directory appended).
	ResultAdapter []string `json:"result_adapter,omitempty"`
	// Native maps a harness's own JSON to result.json v1 at collect.
	Native *NativeResult `json:"native_result,omitempty"`
	// Client is a standard benchmark client's output to read instead of
	// result.json (spec harness.result).
	Client *ClientResult `json:"client_result,omitempty"`
	// Telemetry is what the jobs scrape while a cell runs (spec
	// telemetry).
	Telemetry *Telemetry `json:"telemetry,omitempty"`
	// Cache is the cache state each case declares and how the job sets
	// it before the case (spec cache: and cases.ID.cache).
	Cache *CachePlan `json:"cache,omitempty"`
	// Profile is what the jobs profile and how (spec profile).
	Profile *ProfilePlan `json:"profile,omitempty"`
	Jobs    []Job        `json:"jobs"`
	Cells   []Cell       `json:"cells"`
}

// Telemetry is the endpoints the jobs scrape and every how many seconds.
type Telemetry struct {
	Endpoints []string `json:"endpoints"`
	IntervalS int      `json:"interval_s"`
	// GPUIntervalMS is how often the job samples the GPUs (kvsweep job
	// gpu-sample into GPUSamplesFile), in milliseconds; 0: not at all.
	GPUIntervalMS int `json:"gpu_interval_ms,omitempty"`
}

// ClientResult is a standard benchmark client's output file (File,
// relative to the cell directory, of Format) and how its runs map to
// cases (CaseBy, Values: case id -> run value).
type ClientResult struct {
	Format string            `json:"format"`
	File   string            `json:"file"`
	CaseBy string            `json:"case_by,omitempty"`
	Values map[string]string `json:"values,omitempty"`
}

// NativeResult says where in a harness's own JSON file (File, relative to
// the cell directory) each case's verdict, message and metrics are, as
// JSON pointers; the case "*" stands for every case, and "{case}" in a
// pointer for the case id.
type NativeResult struct {
	File  string                `json:"file"`
	Cases map[string]NativeCase `json:"cases"`
}

// NativeCase is where one case's results are.
type NativeCase struct {
	Verdict string                  `json:"verdict"`
	Message string                  `json:"message,omitempty"`
	Metrics map[string]NativeMetric `json:"metrics,omitempty"`
}

// NativeMetric is where a metric is, its unit and direction, and the
// factor its value is multiplied by.
type NativeMetric struct {
	Pointer   string  `json:"pointer"`
	Unit      string  `json:"unit,omitempty"`
	Direction string  `json:"direction,omitempty"`
	Scale     float64 `json:"scale"`
}

// Validity is the spec's validity rules ("tokens_generated > 0", package
// rules) and verdict policy, as collect applies them.
type Validity struct {
	Cases      map[string][]string `json:"cases,omitempty"`      // case id -> rules
	Topologies map[string][]string `json:"topologies,omitempty"` // topology -> rules for all its cases
	// VerdictsOnly lists topologies whose metrics are never compared or gated.
	VerdictsOnly []string `json:"verdicts_only,omitempty"`
}

// Job is one script with its cell table: an array job, or a single cell.
type Job struct {
	Name   string `json:"name"`
	Script string `json:"script"`
	// Object is the Kubernetes Job the script runs in (scheduler k8s):
	// jobs/NAME.job.yaml, completed at each submission.
	Object   string    `json:"object,omitempty"`
	Table    string    `json:"table"`
	Args     string    `json:"args"`
	Array    bool      `json:"array"`
	Topology string    `json:"topology"`
	Kind     string    `json:"kind"`
	Count    int       `json:"count"` // number of cells
	Res      Resources `json:"resources"`
	// Engine is set when the job's cells are one engine's that has an
	// image, environment or expected commits of its own; Image and Expect
	// are then the job's, in place of the manifest's.
	Engine string            `json:"engine,omitempty"`
	Image  string            `json:"image,omitempty"`
	Expect map[string]string `json:"expect,omitempty"`
	// Services, when not nil, replace the manifest's for this job's cells
	// (the engine's services).
	Services *[]string `json:"services,omitempty"`
}

// ServicesOf is what the cells of job start before the harness: the
// job's own, else the manifest's.
func (m *Manifest) ServicesOf(job string) []string {
	for _, j := range m.Jobs {
		if j.Name == job && j.Services != nil {
			return *j.Services
		}
	}
	return m.Services
}

// ImageOf is the image the cells of job run: the job's own, else the
// sweep's.
func (m *Manifest) ImageOf(job string) string {
	if j := m.JobByName(job); j != nil && j.Image != "" {
		return j.Image
	}
	return m.Image
}

// Resources requested by each task of a job.
type Resources struct {
	Nodes       int    `json:"nodes"`
	GPUsPerNode int    `json:"gpus_per_node"`
	CPUsPerTask int    `json:"cpus_per_task"`
	Mem         string `json:"mem,omitempty"`
	TimeLimit   string `json:"time_limit"` // Slurm format
	TimeSeconds int64  `json:"time_seconds"`
}

// Cell is one cell of the sweep and where its job finds it.
type Cell struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Params   map[string]string `json:"params"`
	Cases    []string          `json:"cases"`
	Engine   string            `json:"engine"`
	Topology string            `json:"topology"`
	Geometry string            `json:"geometry"`
	Kind     string            `json:"kind"`
	Job      string            `json:"job"`
	Index    int               `json:"index"` // line of Job's cell table (0-based), the array index
	Dir      string            `json:"dir"`
	Argv     []string          `json:"argv"`
}

// JobByName returns the job with that name, or nil.
func (m *Manifest) JobByName(name string) *Job {
	for i := range m.Jobs {
		if m.Jobs[i].Name == name {
			return &m.Jobs[i]
		}
	}
	return nil
}

// GPUHours is the GPU time the sweep requests at its time limits.
func (m *Manifest) GPUHours() float64 {
	var h float64
	for _, c := range m.Cells {
		if j := m.JobByName(c.Job); j != nil {
			h += float64(j.Res.Nodes*j.Res.GPUsPerNode) * float64(j.Res.TimeSeconds) / 3600
		}
	}
	return h
}

// ReadManifest loads DIR/manifest.json. The manifest is shared, read
// only: a command that asks for it again (open the scheduler, follow the
// sweep, collect) gets the one it read, as long as the file is still the
// same one (same inode, size and modification time); a large sweep's
// manifest is megabytes of JSON.
func ReadManifest(dir string) (*Manifest, error) {
	path, err := filepath.Abs(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	fi, statErr := os.Lstat(path)
	if statErr == nil {
		if m := lastManifest.get(path, fi); m != nil {
			return m, nil
		}
	}
	m, err := readManifest(dir)
	if err == nil && statErr == nil {
		lastManifest.put(path, fi, m)
	}
	return m, err
}

// lastManifest is the manifest ReadManifest read last.
var lastManifest manifestMemo

type manifestMemo struct {
	mu   sync.Mutex
	path string
	fi   os.FileInfo
	m    *Manifest
}

func (c *manifestMemo) get(path string, fi os.FileInfo) *Manifest {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.path != path || !os.SameFile(c.fi, fi) || c.fi.Size() != fi.Size() || !c.fi.ModTime().Equal(fi.ModTime()) {
		return nil
	}
	return c.m
}

func (c *manifestMemo) put(path string, fi os.FileInfo, m *Manifest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.path, c.fi, c.m = path, fi, m
}

func readManifest(dir string) (*Manifest, error) {
	b, err := ReadFile(dir, ManifestFile, MaxManifestSize)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a sweep directory (no %s; create one with kvsweep render): %w", dir, ManifestFile, os.ErrNotExist)
		}
		return nil, err
	}
	var m Manifest
	// The cells are nearly all of a large manifest: decoded on every CPU.
	if !jsonsplit.Unmarshal(b, "cells", &m, &m.Cells, cellDecoder) {
		m = Manifest{}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
		}
	}
	if m.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d is not supported (expected %d)", filepath.Join(dir, ManifestFile), m.SchemaVersion, SchemaVersion)
	}
	// The id names the scheduler's jobs and is shown on terminals: one
	// render would not have written is refused where it is (a manifest
	// without one, as tests write, is read as before).
	if err := CheckID(m.SweepID); err != nil && m.SweepID != "" {
		at := filepath.Join(dir, ManifestFile)
		if line, col, ok := jsonscan.Locate(b, "/sweep_id"); ok {
			at = fmt.Sprintf("%s:%d:%d", at, line, col)
		}
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	return &m, nil
}

// ExitMarker is what a job writes to cells/ID/exit on every way out.
type ExitMarker struct {
	ExitCode    int       `json:"exit_code"`
	Signal      string    `json:"signal,omitempty"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	JobID       string    `json:"job_id"`
	ArrayJobID  string    `json:"array_job_id,omitempty"`
	ArrayTaskID string    `json:"array_task_id,omitempty"`
	Host        string    `json:"host"`
	Cluster     string    `json:"cluster,omitempty"` // SLURM_CLUSTER_NAME
}

// ReadExitMarker reads a cell's exit marker; ok is false when there is none.
func ReadExitMarker(sweepDir, cellID string) (m ExitMarker, ok bool, err error) {
	b, err := ReadFile(sweepDir, CellsDir+"/"+cellID+"/"+ExitFile, MaxMarkerSize)
	return parseExitMarker(b, err, cellID)
}

// CellExitMarker is ReadExitMarker through an open cell directory.
func CellExitMarker(c *CellFiles, cellID string) (m ExitMarker, ok bool, err error) {
	if !c.Has(ExitFile) {
		return m, false, nil
	}
	b, err := c.ReadFile(ExitFile, MaxMarkerSize)
	return parseExitMarker(b, err, cellID)
}

func parseExitMarker(b []byte, err error, cellID string) (m ExitMarker, ok bool, _ error) {
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	// Strict: a field the job script writes that this reader does not know
	// is a format drift between the two, and a test catches it.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, false, fmt.Errorf("cell %s: exit marker: %w", cellID, err)
	}
	return m, true, nil
}

// CachePlan is what the jobs do to the engines' caches before each case
// and what collect holds each case's window to.
type CachePlan struct {
	// Cases is each case's declared state, by case id; a case not listed
	// is warm with no floor.
	Cases map[string]CaseCache `json:"cases,omitempty"`
	// Reset is whether the job resets the engines' caches before a cold
	// case (default true; false runs a cold case on whatever the caches
	// hold, which collect then judges).
	Reset bool `json:"reset"`
	// TierReset is the argv of the command that flushes the tier under
	// test (the KVCR service), run before a cold case after the engines'
	// resets.
	TierReset []string `json:"tier_reset,omitempty"`
	// MaxColdHitRate is the hit rate a cold case's window may show at
	// most (GPU-local or connector); above it the case is INVALID.
	MaxColdHitRate float64 `json:"max_cold_hit_rate"`
}

// CaseCache is one case's declared cache state.
type CaseCache struct {
	// State is cold, warm or primed.
	State string `json:"state"`
	// Prime is the argv of the priming step a primed case runs first.
	Prime []string `json:"prime,omitempty"`
	// MinReuse is the reuse a warm or primed case's window must show at
	// least (0: no floor).
	MinReuse float64 `json:"min_reuse,omitempty"`
}

// Cache states a case may declare.
const (
	CacheCold   = "cold"
	CacheWarm   = "warm"
	CachePrimed = "primed"
)
