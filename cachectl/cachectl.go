// Package cachectl sets the cache state a case declares before it runs
// and marks the case's window: kvsweep job case start|end, which a
// harness runs around each case. Before a cold case it resets every
// engine's cache through the engine's own endpoint (vLLM
// POST /reset_prefix_cache, SGLang POST /flush_cache) once the engine is
// idle, then runs the tier's reset command; before a primed case it runs
// the case's priming step. What it did is one line of the cell's
// case-windows.jsonl, which collect judges the case by.
package cachectl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// Help is kvsweep job case's help text.
const Help = `A harness runs "job case start CASE" before each case and "job case end
CASE" after it (a case id that starts with - goes after --). Both append
one JSON line to $KVSWEEP_CELL_DIR/case-windows.jsonl; the window between
them is the case's, for telemetry.

start reads the case's cache state from the sweep's manifest.json
($KVSWEEP_SWEEP_DIR). cold (with cache.reset true): each engine (the
spec's telemetry endpoints and the lines of telemetry-endpoints, "URL
[engine=vllm|sglang|dynamo] [reset=URL] [role=R] [name=N]") is waited on
until its metrics say it is idle, then reset: vLLM POST /reset_prefix_cache
(?reset_external=true when it counts a connector's hits; the server needs
VLLM_SERVER_DEV_MODE=1), SGLang POST /flush_cache; then cache.tier_reset
runs. primed: the case's prime command runs, in the cell directory. warm:
nothing. Each step is recorded with what it did; "t" is taken after them.

The exit status is 0 even when a reset failed (collect makes the case
INVALID; the harness goes on), 2 on a usage error, 1 when the line could
not be written.`

// Step is one thing done to the caches before a case.
type Step struct {
	What   string `json:"what"` // reset, tier_reset, prime, endpoints
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Line is a start line of case-windows.jsonl (an end line is case,
// event and t alone).
type Line struct {
	Case  string `json:"case"`
	Event string `json:"event"`
	T     int64  `json:"t"`
	Cache string `json:"cache"` // on every start line: the job wrote it
	Steps []Step `json:"steps,omitempty"`
	Error string `json:"error,omitempty"`
}

// Options is where the cell is and how long each step may take.
type Options struct {
	SweepDir, CellDir string
	// Client makes the engine requests; nil: one with RequestTimeout.
	Client *http.Client
	// RequestTimeout bounds each HTTP request (default 30s).
	RequestTimeout time.Duration
	// IdleWait is how long an engine may stay busy before its reset is
	// given up (default 2m); Poll is how often its metrics are read
	// meanwhile (default 500ms).
	IdleWait, Poll time.Duration
	// CommandTimeout bounds the tier's reset and a priming step (default
	// 30m).
	CommandTimeout time.Duration
	Now            func() time.Time
}

// FromEnv is the Options a job's environment gives: KVSWEEP_SWEEP_DIR,
// KVSWEEP_CELL_DIR (or KVSWEEP_CELL_ID under the sweep's cells).
func FromEnv(getenv func(string) string) (Options, error) {
	o := Options{SweepDir: getenv("KVSWEEP_SWEEP_DIR"), CellDir: getenv("KVSWEEP_CELL_DIR")}
	if o.CellDir == "" && o.SweepDir != "" && getenv("KVSWEEP_CELL_ID") != "" {
		o.CellDir = filepath.Join(o.SweepDir, sweep.CellsDir, getenv("KVSWEEP_CELL_ID"))
	}
	if o.SweepDir == "" && o.CellDir != "" {
		o.SweepDir = filepath.Dir(filepath.Dir(o.CellDir))
	}
	if o.CellDir == "" {
		return o, fail.Usagef("KVSWEEP_CELL_DIR is not set: job case runs inside a kvsweep job, which sets it")
	}
	return o, nil
}

func (o *Options) defaults() {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.Client == nil {
		// A redirect is an answer to judge, never followed (a POST would
		// turn into a GET of another server).
		o.Client = &http.Client{Timeout: o.RequestTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.IdleWait <= 0 {
		o.IdleWait = 2 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 30 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Mark is kvsweep job case EVENT CASE: start sets the case's cache state
// and appends its start line, end appends its end line; it prints the
// line to out.
func Mark(ctx context.Context, o Options, event, caseID string, out io.Writer) error {
	if !sweep.IsCaseMarkID(caseID) {
		return fail.Usagef("%q is not a case id (expected 1 to %d printable bytes, no space)", caseID, sweep.MaxCaseMarkID)
	}
	o.defaults()
	var l any
	switch event {
	case "start":
		l = Start(ctx, o, caseID)
	case "end":
		l = struct {
			Case  string `json:"case"`
			Event string `json:"event"`
			T     int64  `json:"t"`
		}{caseID, "end", o.Now().UnixMilli()}
	default:
		return fail.Usagef("%q: expected start or end", event)
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := appendLine(filepath.Join(o.CellDir, sweep.CaseWindowsFile), append(b, '\n')); err != nil {
		return err
	}
	_, err = out.Write(b)
	fmt.Fprintln(out)
	return err
}

// appendLine appends b to path in one write; path must be a regular file
// if it exists (a link or a FIFO is refused).
func appendLine(path string, b []byte) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%s), refused", path, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Start sets caseID's declared cache state and returns its start line.
func Start(ctx context.Context, o Options, caseID string) Line {
	o.defaults()
	l := Line{Case: caseID, Event: "start", Cache: sweep.CacheWarm}
	m, err := sweep.ReadManifest(o.SweepDir)
	switch {
	case err != nil:
		l.Cache, l.Error = "", fmt.Sprintf("the cache state of %s is unknown: %v", caseID, err)
	case m.Cache != nil:
		l.Cache, l.Steps, l.Error = apply(ctx, o, m, caseID)
	}
	l.T = o.Now().UnixMilli()
	return l
}

// apply does what the plan says for caseID's state.
func apply(ctx context.Context, o Options, m *sweep.Manifest, caseID string) (string, []Step, string) {
	cc, ok := m.Cache.Cases[caseID]
	if !ok || cc.State == "" {
		cc.State = sweep.CacheWarm
	}
	var steps []Step
	switch cc.State {
	case sweep.CacheCold:
		if !m.Cache.Reset {
			return cc.State, nil, ""
		}
		var eps []string
		if m.Telemetry != nil {
			eps = m.Telemetry.Endpoints
		}
		steps = ResetEngines(ctx, o, eps)
		if len(m.Cache.TierReset) > 0 {
			steps = append(steps, runStep(ctx, o, "tier_reset", m.Cache.TierReset))
		}
	case sweep.CachePrimed:
		steps = append(steps, runStep(ctx, o, "prime", cc.Prime))
	}
	return cc.State, steps, firstFailure(steps)
}

// firstFailure is what the line's error says: the first step that
// failed, and how many more did.
func firstFailure(steps []Step) string {
	var bad []Step
	for _, s := range steps {
		if !s.OK {
			bad = append(bad, s)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	msg := fmt.Sprintf("%s of %s failed: %s", bad[0].What, bad[0].Target, bad[0].Detail)
	if len(bad) > 1 {
		msg += fmt.Sprintf(" (and %d more steps)", len(bad)-1)
	}
	return msg
}

// Command is kvsweep job case's run: ARGS are start or end and the case
// id; the cell is the job's (FromEnv).
func Command(args []string, out io.Writer) error {
	o, err := FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if len(args) != 2 {
		return fail.Usagef("expected start or end, then the case id; got %d arguments", len(args))
	}
	return Mark(context.Background(), o, args[0], args[1], out)
}
