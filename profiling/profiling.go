// Package profiling takes the profile a spec's profile section asks for:
// the nsys wrapper of the profiled workers (kvsweep job case wrap),
// the profiled case's window, opened at kvsweep job case start (after the
// delay) and closed at its end or after the duration through the
// engines' own profiler endpoints (POST /start_profile, /stop_profile),
// and profile.jsonl, the record of what was done, which collect reads
// beside the files the profilers wrote.
package profiling

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// Help is the help text of kvsweep job case wrap.
const Help = `A harness starts each worker as "kvsweep job case wrap WORKER -- CMD
ARG...". When the sweep's spec profiles with nsys and names WORKER in
profile.workers (or names none), the command runs under
  nsys profile -o $KVSWEEP_CELL_DIR/profile/WORKER --force-overwrite true
with --delay and --duration (profile.delay, profile.duration) or, when
profile.cases names cases, --capture-range cudaProfilerApi
--capture-range-end repeat: the engine's CUDA profiler (vLLM
--profiler-config '{"profiler":"cuda"}') opens and closes the range when
kvsweep job case starts and ends a profiled case. nsys writes
WORKER.nsys-rep there. Otherwise, and when nsys is not on the PATH (said
in profile/profile.jsonl), CMD runs as it is. WORKER is the name the
harness gives the worker: letters, digits, '.', '_' or '-'.

A profiled case (profile.cases, every case when it names none, with
torch) has its window: "start" asks the profiled workers' engines (the
lines of telemetry-endpoints whose name= is in profile.workers) to POST
/start_profile, after profile.delay; "end" (or profile.duration) asks them
to POST /stop_profile, which returns once the trace is written. Each step
is a line of profile/profile.jsonl; one that fails never fails the case
(collect says so, and makes the case INVALID only with profile.required).`

// Line is one line of profile/profile.jsonl: something the job did to
// take a profile, whether it took, and what the profiler answered.
type Line struct {
	T      int64  `json:"t"`
	Event  string `json:"event"` // wrap, start, stop, skip
	Case   string `json:"case,omitempty"`
	Worker string `json:"worker,omitempty"`
	Target string `json:"target,omitempty"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Options is the cell being profiled and how the engines are asked.
type Options struct {
	SweepDir, CellDir string
	// Client makes the engine requests; nil: one with a timeout of
	// StopTimeout (a stop waits for the trace to be written).
	Client      *http.Client
	StopTimeout time.Duration
	// Poll is how often a window waits on the case's end.
	Poll time.Duration
	Now  func() time.Time
	// Spawn starts the window of a case that has a delay or a duration,
	// beside the harness (nil: this binary's job case window).
	Spawn func(caseID string) error
}

func (o *Options) defaults() {
	if o.StopTimeout <= 0 {
		o.StopTimeout = 10 * time.Minute
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.StopTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

var workerRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// IsWorker reports whether name can name a worker (and its report file).
func IsWorker(name string) bool { return workerRE.MatchString(name) }

// dir is the cell's profile folder, made if need be.
func (o Options) dir() (string, error) {
	d := filepath.Join(o.CellDir, sweep.ProfileDir)
	if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
		return d, fmt.Errorf("%s: not a directory (%s), refused", d, fi.Mode().Type())
	}
	return d, os.MkdirAll(d, 0o755)
}

// record appends l to profile.jsonl in one write.
func (o Options) record(l Line) error {
	if l.T == 0 {
		l.T = o.Now().UnixMilli()
	}
	if _, err := o.dir(); err != nil {
		return err
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	path := filepath.Join(o.CellDir, filepath.FromSlash(sweep.ProfileLogFile))
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%s), refused", path, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// FromEnv is the Options a job's environment gives: KVSWEEP_SWEEP_DIR and
// KVSWEEP_CELL_DIR.
func FromEnv(getenv func(string) string) Options {
	o := Options{SweepDir: getenv("KVSWEEP_SWEEP_DIR"), CellDir: getenv("KVSWEEP_CELL_DIR")}
	if o.SweepDir == "" && o.CellDir != "" {
		o.SweepDir = filepath.Dir(filepath.Dir(o.CellDir))
	}
	return o
}

// Command is kvsweep job case: wrap WORKER -- CMD... (Wrap), window CASE
// (Window, which case start leaves running beside the harness), or
// start|end CASE, which mark runs (cachectl.Command), a profiled case's
// window opened after its start line and closed before its end line.
func Command(args []string, out io.Writer, mark func([]string, io.Writer) error) error {
	o := FromEnv(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case len(args) > 0 && args[0] == "wrap":
		return Wrap(o, args[1:])
	case len(args) == 2 && args[0] == "window":
		return Window(ctx, o, args[1])
	case len(args) == 2 && args[0] == "end" && o.CellDir != "" && sweep.IsCaseMarkID(args[1]):
		CaseEnd(ctx, o, args[1])
	}
	if err := mark(args, out); err != nil {
		return err
	}
	if len(args) == 2 && args[0] == "start" && o.CellDir != "" && sweep.IsCaseMarkID(args[1]) {
		CaseStart(ctx, o, args[1])
	}
	return nil
}

// The engines' profiler routes and the body key a start sends (SGLang's
// ProfileReqInput.output_dir; vLLM reads no body): upstream's facts hold
// them to the pinned releases.
const (
	StartRoute   = "/start_profile"
	StopRoute    = "/stop_profile"
	OutputDirKey = "output_dir"
)
