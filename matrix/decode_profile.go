package matrix

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

// Profilers a spec's profile.tool may name: nsys wraps the workers'
// processes (nsys profile), torch asks the engines' own profiler
// endpoints (/start_profile, /stop_profile) around each case.
const (
	ProfileNsys  = "nsys"
	ProfileTorch = "torch"
)

// workerRE is a worker's name: what a file name can carry.
var workerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// ProfileTools lists the values profile.tool accepts.
var ProfileTools = []string{ProfileNsys, ProfileTorch}

// MaxProfileWindow bounds profile.delay and profile.duration: a longer
// one is a typo (a profile of hours is gigabytes).
const MaxProfileWindow = 24 * time.Hour

// Profile is the spec's profile section: which cases are profiled, with
// what, on which workers, and over what part of the case.
type Profile struct {
	Tool string
	// Cases are the profiled cases (empty: every case the cell plans
	// with torch; with nsys, the workers' whole run).
	Cases []string
	// Workers are the names of the profiled workers, as the harness
	// names them to kvsweep job profile wrap and in telemetry-endpoints
	// (name=); empty: every worker.
	Workers []string
	// Delay and Duration bound the window: it opens Delay after the
	// case starts (nsys without cases: after the worker starts) and
	// closes after Duration (0: at the case's end, or the worker's).
	Delay, Duration time.Duration
	// Required: a profile that cannot be taken makes the profiled
	// cases INVALID; otherwise it is a note and fails nothing.
	Required bool
	Pos      Pos
	casesAt  []Value
}

// profile reads profile: {tool, cases, workers, delay, duration, required}.
func (d *decoder) profile(n ast.Node, where string) *Profile {
	p := &Profile{Pos: yamlpos.PosOf(n)}
	seen := false
	d.Fields(n, where,
		yamlpos.F("tool", func(n ast.Node, w string) { seen, p.Tool = true, d.oneOf(n, w, ProfileTools) }),
		yamlpos.F("cases", func(n ast.Node, w string) {
			p.casesAt = d.StrList(n, w)
			for _, v := range p.casesAt {
				p.Cases = append(p.Cases, v.S)
			}
		}),
		yamlpos.F("workers", func(n ast.Node, w string) {
			for i, v := range d.StrList(n, w) {
				if !workerRE().MatchString(v.S) {
					d.ErrAt(v, "%s[%d]: %q is not a worker name (expected letters, digits, '.', '_' or '-', as the harness names the worker)", w, i, v.S)
				}
				p.Workers = append(p.Workers, v.S)
			}
		}),
		yamlpos.F("delay", func(n ast.Node, w string) { p.Delay = d.window(n, w, false) }),
		yamlpos.F("duration", func(n ast.Node, w string) { p.Duration = d.window(n, w, true) }),
		yamlpos.F("required", func(n ast.Node, w string) { p.Required = d.Bool(n, w) }),
	)
	if !seen && len(d.Errs) == 0 {
		d.Errorf(n, "%s: missing required key \"tool\" (expected one of: %s)", where, strings.Join(ProfileTools, ", "))
	}
	return p
}

// window reads a delay or a duration: a Go duration from 0 (a delay) or
// 1s (a duration) to MaxProfileWindow, in whole seconds (nsys counts
// seconds).
func (d *decoder) window(n ast.Node, where string, positive bool) time.Duration {
	v, ok := d.Scalar(n, where)
	if !ok {
		return 0
	}
	t, err := time.ParseDuration(v.S)
	low := "0s"
	if positive {
		low = "1s"
	}
	if err != nil || t < 0 || (positive && t < time.Second) || t > MaxProfileWindow || t%time.Second != 0 {
		d.ErrAt(v, "%s: %q is not a profile window (expected whole seconds from %s to %s, like 30s or 2m)", where, v.S, low, "24h")
		return 0
	}
	return t
}

// checkProfileCases refuses a profiled case no cell plans: a misspelt id
// would profile nothing.
func checkProfileCases(spec *Spec, cells []Cell) error {
	if spec.Profile == nil {
		return nil
	}
	planned := map[string]bool{}
	for _, c := range cells {
		for _, id := range c.Cases {
			planned[id] = true
		}
	}
	var errs ErrorList
	for i, v := range spec.Profile.casesAt {
		if !planned[v.S] {
			errs = append(errs, &Error{File: spec.File, Pos: v.Pos,
				Msg: fmt.Sprintf("profile.cases[%d]: no cell plans case %q (expected one of: %s)", i, v.S, strings.Join(slices.Sorted(maps.Keys(planned)), ", "))})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
