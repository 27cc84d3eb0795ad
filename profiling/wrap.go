package profiling

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// NsysArgs are the words before the worker's command when plan profiles
// it with nsys: the report goes to out (nsys adds .nsys-rep). Flags from
// the Nsight Systems user guide, CLI profile command switches
// (https://docs.nvidia.com/nsight-systems/UserGuide/index.html):
// -o/--output, -f/--force-overwrite, -y/--delay and -d/--duration in
// seconds, -c/--capture-range cudaProfilerApi with --capture-range-end.
func NsysArgs(plan *sweep.ProfilePlan, out string) []string {
	a := []string{"profile", "-o", out, "--force-overwrite", "true"}
	if len(plan.Cases) > 0 {
		// The case's window, opened and closed through the engine's
		// CUDA profiler (cudaProfilerStart/Stop), once per case.
		return append(a, "--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat")
	}
	if plan.DelayS > 0 {
		a = append(a, "--delay", strconv.Itoa(plan.DelayS))
	}
	if plan.DurationS > 0 {
		a = append(a, "--duration", strconv.Itoa(plan.DurationS))
	}
	return a
}

// WrapArgv is what runs for worker: argv under nsys, or argv itself (and
// why, when the worker was to be profiled and cannot be).
func WrapArgv(o Options, plan *sweep.ProfilePlan, worker string, argv []string, lookPath func(string) (string, error)) ([]string, Line) {
	l := Line{Event: "wrap", Worker: worker}
	if plan == nil || plan.Tool != "nsys" || !plan.ProfiledWorker(worker) {
		return argv, Line{}
	}
	nsys, err := lookPath("nsys")
	if err != nil {
		l.Detail = fmt.Sprintf("nsys is not on the PATH of the worker's node or image: worker %s runs unprofiled (%v)", worker, err)
		return argv, l
	}
	words := NsysArgs(plan, filepath.Join(o.CellDir, sweep.ProfileDir, worker))
	l.OK, l.Target = true, nsys+" "+strings.Join(words, " ")
	return append(append([]string{nsys}, words...), argv...), l
}

// Wrap is kvsweep job case wrap WORKER -- CMD...: it records what it
// does in profile.jsonl and replaces itself with the command.
func Wrap(o Options, args []string) error {
	if len(args) > 1 && args[1] == "--" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) < 2 || !IsWorker(args[0]) {
		return fail.Usagef("expected WORKER -- CMD [ARG...], WORKER of letters, digits, '.', '_' or '-'; got %q", args)
	}
	o.defaults()
	var plan *sweep.ProfilePlan
	if m, err := sweep.ReadManifest(o.SweepDir); err == nil {
		plan = m.Profile
	} else {
		fmt.Fprintf(os.Stderr, "kvsweep job case wrap: %v; worker %s runs unprofiled\n", err, args[0])
	}
	argv, l := WrapArgv(o, plan, args[0], args[1:], exec.LookPath)
	if l.Event != "" {
		if err := o.record(l); err != nil {
			fmt.Fprintf(os.Stderr, "kvsweep job case wrap: %v\n", err)
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}
