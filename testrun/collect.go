package testrun

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/kvsweep/kvsweep/hardware"
	"github.com/kvsweep/kvsweep/harness"
	"github.com/kvsweep/kvsweep/internal/yamlpos"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/rules"
	"github.com/kvsweep/kvsweep/sweep"
)

// noResultStates are the states of a cell without a result that are not
// the test's doing besides sweep.OutsideTest: it was cancelled, or it was
// never submitted. A cell that has not ended yet (Unfinished) is neither.
var noResultStates = map[string]bool{"CANCELLED": true, "NOT_SUBMITTED": true, "UNKNOWN": true}

// DefaultMaxResultSize bounds one result.json.
const DefaultMaxResultSize = 16 << 20

// CollectOptions control Collect.
type CollectOptions struct {
	MaxResultSize int64 // default DefaultMaxResultSize
	// States is the scheduler's word on each cell (by cell id): how its
	// attempts ended; may be nil.
	States  map[string]sweep.CellState
	Workers int       // default 2 x CPUs
	Now     time.Time // collection time (default: now)
	// Manifest, if the caller has read it already (large sweeps have
	// manifests of several megabytes).
	Manifest *sweep.Manifest
	// Ref is recorded in the run (see Run.Ref).
	Ref string
	// Progress, if set, is told how many cells of total were taken up,
	// every 256 cells and at the end, from one goroutine.
	Progress func(done, total int)
}

// Collect reads every cell of the sweep in dir. Cells are read in parallel
// by a fixed number of workers, one file at a time each, so memory stays
// bounded by workers x MaxResultSize. One bad file never stops the others.
func Collect(dir string, opts CollectOptions) (*Run, error) {
	m := opts.Manifest
	if m == nil {
		var err error
		if m, err = sweep.ReadManifest(dir); err != nil {
			return nil, err
		}
	}
	opts = opts.withDefaults()
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	v, err := validityOf(m)
	if err != nil {
		return nil, err
	}
	run := &Run{ID: m.SweepID, Name: m.Name, Version: m.Version, Ref: opts.Ref, CollectedAt: opts.Now.UTC(), Cells: make([]CellResult, len(m.Cells)), Dir: dir}
	if b, err := sweep.ReadFile(root, sweep.SpecFile, yamlpos.MaxSize); err == nil {
		// A frozen spec that does not parse costs the spec's part of "what changed" only.
		run.Spec, _ = yamlpos.Flatten(sweep.SpecFile, b)
	}
	sroot, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer sroot.Close()
	cells := sweep.OpenCells(sroot, root)
	defer cells.Close()
	collectAll(len(m.Cells), opts, func(i int, reader *harness.Reader) {
		c := m.Cells[i]
		files := cells.Open(c.ID)
		started := files.IsFile(sweep.StartedFile)
		cr := collectCell(root, files, m, c, started, opts, reader)
		if cr.Outcome == HarnessFailed && len(cr.Cases) == 0 {
			cr.Detail += logEnd(root, c.ID)
		}
		if m.Telemetry != nil {
			addTelemetry(&cr, files)
		}
		addGPU(&cr, files, m)
		v.apply(&cr, c.Topology)
		judgeCache(&cr, files, m.Cache)
		addHealth(&cr, files)
		addProfile(&cr, files, m)
		files.Close()
		cr.Class = classify(cr, started)
		run.Cells[i] = cr
	})
	for _, c := range run.Cells {
		if c.Started != "" && (run.Started == "" || c.Started < run.Started) {
			run.Started = c.Started
		}
	}
	return run, nil
}

// withDefaults fills in the options left zero.
func (opts CollectOptions) withDefaults() CollectOptions {
	if opts.MaxResultSize <= 0 {
		opts.MaxResultSize = DefaultMaxResultSize
	}
	if opts.Workers <= 0 {
		opts.Workers = 2 * runtime.NumCPU()
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	return opts
}

// collectAll calls collect for each of n cells on opts.Workers workers,
// each with a reader of its own, and reports progress as it hands them
// out.
func collectAll(n int, opts CollectOptions, collect func(i int, reader *harness.Reader)) {
	var wg sync.WaitGroup
	// The cells go out in runs of collectRun: one hand-over per run, not
	// per cell.
	const collectRun = 32
	next := make(chan int, opts.Workers)
	for w := 0; w < opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reader := &harness.Reader{}
			for from := range next {
				for i := from; i < min(from+collectRun, n); i++ {
					collect(i, reader)
				}
			}
		}()
	}
	for from := 0; from < n; from += collectRun {
		next <- from
		if opts.Progress != nil && from%256 == 0 {
			opts.Progress(from, n)
		}
	}
	close(next)
	wg.Wait()
	if opts.Progress != nil {
		opts.Progress(n, n)
	}
}

// collectCell reads one cell through the worker's reader w; started says
// whether its harness started.
func collectCell(root string, files *sweep.CellFiles, m *sweep.Manifest, c sweep.Cell, started bool, opts CollectOptions, w *harness.Reader) CellResult {
	image := m.ImageOf(c.Job)
	cr := CellResult{CellID: c.ID, Name: c.Name, Params: c.Params, Planned: c.Cases, Image: result.Image{Ref: image}}
	cr.Image.Digest = digestOf(image)
	cr.fromState(opts.States[c.ID])
	mk, hasMarker, err := sweep.CellExitMarker(files, c.ID)
	if err != nil {
		// A marker that cannot be read says nothing trustworthy about how
		// the job ended: the cell has no valid outcome.
		cr.Outcome, cr.Detail = Invalid, "exit marker: "+err.Error()
		return cr
	}
	if hasMarker {
		cr.fromMarker(mk)
	} else if Unfinished(cr.State) {
		// Still queued or running: whatever it has written so far is not
		// its outcome yet.
		cr.Outcome, cr.Detail = NotFinished, "not finished ("+cr.State+")"
		return cr
	}
	cr.Image.SourceRevisions = readRevisions(files)
	cr.Hardware = readHardware(files)
	if b, ok := optional(files, sweep.NoRevisionsFile, sweep.MaxMarkerSize); ok {
		cr.NoProvenance = strings.TrimSpace(string(b))
	}
	if platformRefused(&cr, files) {
		return cr
	}
	if b, ok := optional(files, sweep.MismatchFile, sweep.MaxMarkerSize); ok {
		cr.Outcome = ProvenanceMismatch
		cr.Detail = strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", " ; ")), " ")
		return cr
	}

	if why, failed := adapterFailure(root, files, m, c.ID); failed {
		cr.Outcome, cr.Detail = Invalid, why
		return cr
	}
	r, err := w.Read(files, c, harness.Spec{Native: m.Native, Client: m.Client}, opts.MaxResultSize)
	if err != nil {
		return withoutValidResult(cr, err, mk, hasMarker, started)
	}
	return withResult(cr, r, c, mk, hasMarker)
}

// withoutValidResult completes a cell whose harness wrote no result
// (harness.MissingError) or one that does not read (err says why and
// where).
func withoutValidResult(cr CellResult, err error, mk sweep.ExitMarker, hasMarker, started bool) CellResult {
	var missing *harness.MissingError
	switch {
	case errors.As(err, &missing) && missing.File != "":
		return withoutFile(cr, missing.File, mk, hasMarker)
	case errors.As(err, &missing):
		return withoutResult(cr, mk, hasMarker, started)
	}
	cr.Outcome, cr.Detail = Invalid, err.Error()
	return cr
}

// fromState takes what the scheduler says of the cell: its final state,
// its nodes and its attempts.
func (cr *CellResult) fromState(st sweep.CellState) {
	cr.State, cr.Nodes, cr.Attempts = st.State, st.Nodes, st.Attempts
	for _, e := range st.Earlier {
		cr.Earlier = append(cr.Earlier, Attempt{State: e.State, Nodes: e.Nodes, Class: stateClass(e.State)})
	}
}

// fromMarker takes what the job's exit marker says: the exit code, when
// it started, and where it ran if the scheduler did not say.
func (cr *CellResult) fromMarker(mk sweep.ExitMarker) {
	code := mk.ExitCode
	cr.ExitCode = &code
	cr.Started = mk.Started.UTC().Format(time.RFC3339)
	if cr.Nodes == "" {
		cr.Nodes = mk.Host
	}
	cr.Cluster = mk.Cluster
}

// withoutResult completes a cell that wrote no result.json: the harness
// failed (it exited non-zero on its own), the job failed before the
// harness started, or the cell is MISSING, with how its job ended.
func withoutResult(cr CellResult, mk sweep.ExitMarker, hasMarker, started bool) CellResult {
	if hasMarker && mk.ExitCode != 0 && mk.Signal == "" {
		cr.Outcome = HarnessFailed
		cr.Detail = fmt.Sprintf("the harness exited %d and wrote no result.json", mk.ExitCode)
		if !started {
			cr.Outcome = NotStarted
			cr.Detail = fmt.Sprintf("the job exited %d before the harness started (see the cell's log)", mk.ExitCode)
		}
		return cr
	}
	cr.Outcome = Missing
	if cr.State == "" {
		cr.State = "UNKNOWN"
		if hasMarker {
			cr.State = "ENDED"
			if mk.Signal != "" {
				cr.State = "SIGNALED_" + mk.Signal
			}
		}
	}
	cr.Detail = "no result.json (" + cr.State + ")"
	return cr
}

// withResult completes a cell whose result was read.
func withResult(cr CellResult, r *result.Result, c sweep.Cell, mk sweep.ExitMarker, hasMarker bool) CellResult {
	if r.CellID != c.ID {
		cr.Outcome = Invalid
		cr.Detail = fmt.Sprintf("result.json names cell %s, but it is in the directory of cell %s", r.CellID, c.ID)
		return cr
	}
	cr.Cases, cr.Evidence = r.Cases, r.Evidence
	if r.Started != "" {
		cr.Started = r.Started
	}
	if r.Image != nil {
		if r.Image.Ref != "" {
			cr.Image.Ref = r.Image.Ref
		}
		if r.Image.Digest != "" {
			cr.Image.Digest = r.Image.Digest
		}
		if r.Image.SourceRevisions != nil {
			cr.Image.SourceRevisions = r.Image.SourceRevisions
		}
	}
	cr.Outcome = OK
	if hasMarker && mk.ExitCode != 0 && !anyFailed(r.Cases) {
		cr.Outcome = HarnessFailed
		cr.Detail = fmt.Sprintf("the harness exited %d although no case failed", mk.ExitCode)
	}
	// After the exit status is judged by what the harness itself said.
	reconcileCases(&cr)
	return cr
}

func anyFailed(cases []result.Case) bool {
	for _, c := range cases {
		switch c.Verdict {
		case result.Fail, result.Error, Invalid, NotReported, Unplanned:
			return true
		}
	}
	return false
}

// classify gives a collected cell its failure class ("" when it passed
// or has not finished). started says whether its harness started. A
// cell in a state that has not ended is never a failure outside the
// test.
func classify(c CellResult, started bool) string {
	switch {
	case c.Outcome == NotFinished:
		return ""
	case c.Health != nil && len(c.Health.Faults()) > 0:
		return ClassInfra
	}
	switch c.Outcome {
	case OK:
		if anyFailed(c.Cases) {
			return ClassTest
		}
		return ""
	case NotStarted:
		return ClassInfra
	case Missing:
		if Unfinished(c.State) {
			return ClassTest
		}
		if !started || sweep.OutsideTest(c.State) || noResultStates[c.State] {
			return ClassInfra
		}
	}
	return ClassTest
}

// stateClass is the class of an earlier attempt from its final state alone.
func stateClass(state string) string {
	if sweep.OutsideTest(state) {
		return ClassInfra
	}
	return ClassTest
}

// readRevisions reads the source-revisions.json the job copied out of the
// image into the cell directory; nil when there is none or it is not one.
func readRevisions(files *sweep.CellFiles) *provenance.SourceRevisions {
	b, ok := optional(files, sweep.RevisionsFile, sweep.MaxRevisionsSize)
	if !ok {
		return nil
	}
	rv, _ := provenance.Parse(b)
	return rv
}

// optional reads name, a marker most cells do not have, when the cell's
// listing holds it (an absent file's error is two allocations, and a
// collect asks every cell for four markers); ok is false when it is
// absent or cannot be read.
// readHardware is the cell's hardware fingerprint from what its job
// recorded (nil when it recorded nothing).
func readHardware(files *sweep.CellFiles) *hardware.Fingerprint {
	env, _ := optional(files, sweep.HardwareEnvFile, sweep.MaxMarkerSize)
	smi, _ := optional(files, sweep.SMIFile, hardware.MaxSMISize)
	nccl, _ := optional(files, sweep.NCCLVersionFile, sweep.MaxMarkerSize)
	return hardware.Read(env, smi, nccl)
}

func optional(files *sweep.CellFiles, name string, max int64) ([]byte, bool) {
	if !files.Has(name) {
		return nil, false
	}
	b, err := files.ReadFile(name, max)
	return b, err == nil
}

// validity is a manifest's rules, parsed once per collection.
type validity struct {
	cases, topologies map[string][]rules.Rule
	verdictsOnly      map[string]bool
}

func validityOf(m *sweep.Manifest) (*validity, error) {
	v := &validity{cases: map[string][]rules.Rule{}, topologies: map[string][]rules.Rule{}, verdictsOnly: map[string]bool{}}
	if m.Validity == nil {
		return v, nil
	}
	for _, src := range []struct {
		what string
		in   map[string][]string
		out  map[string][]rules.Rule
	}{{"case", m.Validity.Cases, v.cases}, {"topology", m.Validity.Topologies, v.topologies}} {
		for name, texts := range src.in {
			rs, err := rules.ParseAll(texts)
			if err != nil {
				return nil, fmt.Errorf("%s: validity rules of %s %q: %v", sweep.ManifestFile, src.what, name, err)
			}
			src.out[name] = rs
		}
	}
	for _, t := range m.Validity.VerdictsOnly {
		v.verdictsOnly[t] = true
	}
	return v, nil
}

// apply turns each PASS of the cell that breaks one of its case's or
// topology's rules into INVALID, saying which rule and what value.
func (v *validity) apply(cr *CellResult, topology string) {
	// A cell run under emulation is a functional check: its timings are
	// QEMU's, never compared or gated.
	cr.VerdictsOnly = v.verdictsOnly[topology] || cr.Emulated != ""
	for i := range cr.Cases {
		cs := &cr.Cases[i]
		if cs.Verdict != result.Pass {
			continue
		}
		ApplyRules(cs, append(append([]rules.Rule(nil), v.cases[cs.ID]...), v.topologies[topology]...))
	}
}

// adapterFailure says why the cell's result adapter failed, when it did:
// its command, exit status and the tail of its output.
func adapterFailure(root string, files *sweep.CellFiles, m *sweep.Manifest, cellID string) (string, bool) {
	b, ok := optional(files, sweep.AdapterFailedFile, sweep.MaxMarkerSize)
	if !ok {
		return "", false
	}
	dir := sweep.CellsDir + "/" + cellID + "/"
	name := "the result adapter"
	if len(m.ResultAdapter) > 0 {
		name = "result adapter " + strings.Join(m.ResultAdapter, " ")
	}
	tail, _, _ := sweep.Tail(root, dir+sweep.AdapterLog, 5, 4096)
	tail = strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(tail), "\n", " | ")), " ")
	if tail == "" {
		tail = "(no output)"
	}
	return fmt.Sprintf("%s failed (exit %s): %s", name, strings.TrimSpace(string(b)), tail), true
}

// withoutFile completes a cell that wrote neither result.json nor the
// file the spec names (harness.result or harness.native_result): the
// harness failed when it exited non-zero on its own, else the cell is
// MISSING, with its state.
func withoutFile(cr CellResult, file string, mk sweep.ExitMarker, hasMarker bool) CellResult {
	cr.Outcome, cr.State = Missing, cmp.Or(cr.State, "UNKNOWN")
	cr.Detail = fmt.Sprintf("no result.json and no %s (%s)", file, cr.State)
	if hasMarker && mk.ExitCode != 0 && mk.Signal == "" {
		cr.Outcome, cr.Detail = HarnessFailed, fmt.Sprintf("the harness exited %d and wrote no %s", mk.ExitCode, file)
	}
	return cr
}

// ApplyRules turns cs, a PASS, into INVALID when it breaks one of rs,
// saying which rule and what value, its harness's message kept after it.
func ApplyRules(cs *result.Case, rs []rules.Rule) {
	why := rules.Check(rs, func(name string) (float64, bool) {
		m, ok := cs.Metrics.Get(name)
		return m.Value, ok
	})
	if why == "" {
		return
	}
	msg := "the harness said PASS, but " + why
	if cs.Message != "" {
		msg += " (its message: " + cs.Message + ")"
	}
	cs.Verdict, cs.Message = Invalid, msg
}
