// Package testrun is a collected sweep, a run: each cell's outcome, its
// cases and metrics, the image and commits it ran, and the failure class
// of a cell that did not pass. It collects a sweep directory into a run
// (result.json held to the schema and the spec's validity rules, one bad
// cell never stopping the others), reads and writes the run's file
// (results.json, with a hand-written cell codec held to encoding/json),
// keeps runs and the test plan's notes in the history store (bbolt), and
// selects runs: a sweep directory, a sweep id, or KEY=VALUE filters over
// the stored runs.
package testrun

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/gpuhealth"
	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/hardware"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/telemetry"
)

// Outcomes of collecting one cell.
const (
	OK            = "OK"             // a valid result.json
	Invalid       = "INVALID"        // result.json unreadable, too large, outside the sweep, or not schema v1
	Missing       = "MISSING"        // no result.json; State says how the job ended
	HarnessFailed = "HARNESS_FAILED" // the harness exited non-zero without explaining it in its result
	// ProvenanceMismatch: the image records other commits than the spec
	// expects; the job started no harness.
	ProvenanceMismatch = "PROVENANCE_MISMATCH"
	// NotStarted: the job failed before its harness started (an image
	// that could not be pulled, a container that did not start).
	NotStarted = "NOT_STARTED"
)

// Failure classes of a cell that did not pass: ClassTest when the harness
// ran and said FAIL or ERROR, broke a validity rule, or itself failed;
// ClassInfra when the cell failed outside the test (node failure,
// preemption, a job that never started its harness). Only infra failures
// are retried automatically.
const (
	ClassTest  = "test"
	ClassInfra = "infra"
)

// CellResult is one collected cell.
type CellResult struct {
	CellID   string            `json:"cell_id"`
	Name     string            `json:"name"`
	Params   map[string]string `json:"params"`
	Planned  []string          `json:"planned_cases"`
	Outcome  string            `json:"outcome"`
	Detail   string            `json:"detail,omitempty"`
	State    string            `json:"state,omitempty"` // the scheduler's final state
	ExitCode *int              `json:"exit_code,omitempty"`
	Image    result.Image      `json:"image"`
	// NoProvenance says why the job could not copy the image's
	// source-revisions.json; empty when it did (or ran no image).
	NoProvenance string        `json:"no_provenance,omitempty"`
	Started      string        `json:"started,omitempty"`
	Cases        []result.Case `json:"cases,omitempty"`
	Evidence     []string      `json:"evidence,omitempty"`
	// Class is ClassTest or ClassInfra for a cell that did not pass.
	Class string `json:"class,omitempty"`
	// Nodes is where the last attempt ran; Cluster its Slurm cluster.
	Nodes   string `json:"nodes,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	// VerdictsOnly: the cell's metrics are never compared or gated.
	VerdictsOnly bool `json:"verdicts_only,omitempty"`
	// Hardware is what the cell ran on, as its job recorded it.
	Hardware *hardware.Fingerprint `json:"hardware,omitempty"`
	// Telemetry is how the scraping of the engines went (spec telemetry).
	Telemetry *telemetry.Summary `json:"telemetry,omitempty"`
	// GPU is what the GPUs of the cell's head node did while it ran
	// (spec telemetry.gpu).
	GPU *gpustat.Summary `json:"gpu,omitempty"`
	// Attempts is how many times the cell was submitted; Earlier how the
	// attempts before the last ended.
	Attempts int       `json:"attempts,omitempty"`
	Earlier  []Attempt `json:"earlier,omitempty"`
	// Cache is, for each case that declares a cache state (spec
	// cases.ID.cache) or that the job marked, what it declared and what
	// the job did to the caches before it.
	Cache []CaseCacheResult `json:"cache,omitempty"`
	// Emulated is "PLATFORM on NODE-PLATFORM" for a cell whose image ran
	// under emulation on a node of another platform (cluster.emulate):
	// a functional check, never a figure.
	Emulated string `json:"emulated,omitempty"`
	// Health is what rose on the GPUs of the cell's head node during its
	// last attempt (package gpuhealth): the counters, before and after,
	// and which rises mean the hardware failed.
	Health *gpuhealth.Report `json:"gpu_health,omitempty"`
	// Profile is the profile the job took of the cell (spec profile).
	Profile *ProfileResult `json:"profile,omitempty"`
}

// Attempt is how an earlier attempt of a cell ended.
type Attempt struct {
	State string `json:"state"`
	Nodes string `json:"nodes,omitempty"`
	Class string `json:"class"`
	// GPUFault is the rises that mean the attempt's GPUs failed under it
	// (it is then an infra failure, whatever its state).
	GPUFault *gpuhealth.Report `json:"gpu_fault,omitempty"`
}

// Run is a collected sweep: the unit of the history store.
type Run struct {
	ID      string `json:"id"` // the sweep id
	Name    string `json:"name"`
	Version string `json:"kvsweep_version,omitempty"` // the kvsweep that rendered it
	// Ref is the source branch or tag the run tested (kvsweep ci --ref,
	// $GITHUB_REF_NAME): what --baseline auto matches.
	Ref string `json:"ref,omitempty"`
	// Spec is the sweep's frozen spec, one entry per key path, for
	// comparisons that say what changed.
	Spec        map[string]string `json:"spec,omitempty"`
	CollectedAt time.Time         `json:"collected_at"`
	Started     string            `json:"started,omitempty"` // earliest cell start
	Cells       []CellResult      `json:"cells"`
	// Notes are the test plan's findings on this run (kvsweep note),
	// attached when the run is read from the history store; they are kept
	// apart from it there.
	Notes []Note `json:"notes,omitempty"`
	// Dir is the sweep directory the run was collected from or read from
	// (its results.json); empty for a run from the history store. Never
	// stored: the evidence files are read from it.
	Dir string `json:"-"`
}

// digestOf returns the sha256:... part of a ref pinned by digest.
func digestOf(ref string) string {
	if i := strings.LastIndex(ref, "@"); i >= 0 && strings.HasPrefix(ref[i+1:], "sha256:") {
		return ref[i+1:]
	}
	return ""
}

// Counts is the number of cells per outcome.
func (r *Run) Counts() map[string]int {
	c := map[string]int{}
	for _, cell := range r.Cells {
		c[cell.Outcome]++
	}
	return c
}

// CountsLine is "8 OK, 1 INVALID, 1 MISSING", and then the cases whose
// result and plan disagree: "3 OK; cases: 2 NOT_REPORTED, 1 UNPLANNED".
func (r *Run) CountsLine() string {
	counts := r.Counts()
	var parts []string
	for _, o := range []string{OK, HarnessFailed, ProvenanceMismatch, Invalid, NotStarted, Missing} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	line := strings.Join(parts, ", ")
	cases := map[string]int{}
	for _, p := range r.CaseProblems() {
		cases[p.Verdict]++
	}
	parts = parts[:0]
	for _, v := range []string{NotReported, Unplanned} {
		if cases[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", cases[v], v))
		}
	}
	if len(parts) > 0 {
		line += "; cases: " + strings.Join(parts, ", ")
	}
	return line
}

// Complete reports whether every cell has a valid result that reports
// the cases the cell planned and no other.
func (r *Run) Complete() bool {
	for _, c := range r.Cells {
		if c.Outcome != OK {
			return false
		}
	}
	return len(r.CaseProblems()) == 0
}

// CaseIDs is the sorted union of the cases planned in the runs.
func CaseIDs(runs ...*Run) []string {
	set := map[string]bool{}
	for _, r := range runs {
		for _, c := range r.Cells {
			for _, id := range c.Planned {
				set[id] = true
			}
			for _, cs := range c.Cases {
				set[cs.ID] = true
			}
		}
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Date is when the run started, else when it was collected.
func (r *Run) Date() time.Time {
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339} {
		if t, err := time.Parse(layout, r.Started); err == nil {
			return t.UTC()
		}
	}
	return r.CollectedAt.UTC()
}

// Revisions is the cell's short commits, or "no provenance" when the job
// could not copy the image's record.
func (c CellResult) Revisions() string {
	if s := c.Image.SourceRevisions.Short(); s != "" || c.NoProvenance == "" {
		return s
	}
	return "no provenance"
}

// OutcomeText is how reports show a cell's outcome: "MISSING (NODE_FAIL)
// [infra]", "OK (after 1 infra retry: NODE_FAIL on n1)".
func OutcomeText(c CellResult) string {
	s := c.Outcome + ": " + c.Detail
	switch c.Outcome {
	case Missing:
		s = "MISSING (" + c.State + ")"
	case OK:
		s = OK
	}
	if c.Class != "" {
		s += " [" + c.Class + "]"
	}
	return s + RetriesText(c)
}

// RetriesText is " (after 1 infra retry: NODE_FAIL on n1)" for a cell
// that was submitted again after attempts that failed outside the test.
func RetriesText(c CellResult) string {
	var infra []string
	for _, a := range c.Earlier {
		if a.Class == ClassInfra {
			infra = append(infra, strings.TrimSuffix(a.State+" on "+a.Nodes, " on "))
		}
	}
	switch len(infra) {
	case 0:
		return ""
	case 1:
		return " (after 1 infra retry: " + infra[0] + ")"
	}
	return fmt.Sprintf(" (after %d infra retries: %s)", len(infra), strings.Join(infra, ", "))
}

// ShortDigest is the first 12 hex digits of a digest.
func ShortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
