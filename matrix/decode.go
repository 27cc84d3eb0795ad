package matrix

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

// decoder is the spec's own decoding on top of yamlpos.
type decoder struct {
	*yamlpos.Decoder
}

// Bounds on a topology's resources, far above any node kvsweep targets,
// so a typo is refused instead of becoming a job no cluster can run.
const (
	MaxNodes       = 4096
	MaxGPUsPerNode = 64
	MaxCPUsPerTask = 4096
)

var (
	nameRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
	axisRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })
	envRE       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	memRE       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+[KMGT]?$`) })
	componentRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })
	commitRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })
	imageRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./][A-Za-z0-9_./:@+-]*$`) })
	userRE      = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(submitter|root|image|[0-9]{1,10}(:[0-9]{1,10})?)$`)
	})
	secretRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY)`)
	})
)

// LoadCells reads, validates and expands the spec at path, returning the
// spec, its cells and the file's bytes.
func LoadCells(path string) (*Spec, []Cell, []byte, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	spec, cells, err := ParseCells(path, src)
	return spec, cells, src, err
}

// ParseCells validates and expands a spec; file is used in messages.
func ParseCells(file string, src []byte) (*Spec, []Cell, error) {
	spec, err := Parse(file, src)
	if err != nil {
		return nil, nil, err
	}
	cells, err := Expand(spec)
	if err != nil {
		return nil, nil, err
	}
	return spec, cells, nil
}

// checkCases refuses settings for a case no cell plans: a misspelt case id
// would silently drop its rules.
func checkCases(spec *Spec, cells []Cell) error {
	planned := map[string]bool{}
	for _, c := range cells {
		for _, id := range c.Cases {
			planned[id] = true
		}
	}
	var errs ErrorList
	for _, id := range slices.Sorted(maps.Keys(spec.Cases)) {
		if !planned[id] {
			errs = append(errs, &Error{File: spec.File, Pos: spec.Cases[id].Pos,
				Msg: fmt.Sprintf("cases.%s: no cell plans case %q (expected one of: %s)", id, id, strings.Join(slices.Sorted(maps.Keys(planned)), ", "))})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Parse decodes and validates a spec. file is used in messages only.
// A non-nil error is an ErrorList.
func Parse(file string, src []byte) (*Spec, error) {
	root, yd, err := yamlpos.Parse(file, src, "a mapping with name, topologies, geometries, harness and matrix")
	if err != nil {
		return nil, err
	}
	d := &decoder{yd}
	s := &Spec{
		File:         file,
		Scheduler:    "slurm",
		CaseGrouping: GroupTogether,
		Topologies:   map[string]*Topology{},
		Geometries:   map[string]*Geometry{},
		Harness:      Harness{CasesFlag: "--cases"},
		Container:    Container{Runtime: "none"},
		Cases:        map[string]*Case{},
	}
	seen := map[string]bool{}
	mark := func(f yamlpos.Field) yamlpos.Field {
		set := f.Set
		f.Set = func(n ast.Node, where string) { seen[f.Name] = true; set(n, where) }
		return f
	}
	var matrixNode, containerNode ast.Node
	d.Fields(root, "",
		mark(yamlpos.F("version", func(n ast.Node, w string) {
			if s.Version = d.Integer(n, w); s.Version != 1 && len(d.Errs) == 0 {
				d.Errorf(n, "%s: unsupported version %d (expected 1)", w, s.Version)
			}
		})),
		mark(yamlpos.F("name", func(n ast.Node, w string) { s.Name = d.name(n, w) })),
		mark(yamlpos.F("scheduler", func(n ast.Node, w string) { s.Scheduler = d.oneOf(n, w, Schedulers) })),
		mark(yamlpos.F("case_grouping", func(n ast.Node, w string) {
			s.CaseGrouping = d.oneOf(n, w, []string{GroupTogether, GroupSeparate})
		})),
		mark(yamlpos.F("cluster", func(n ast.Node, w string) { d.cluster(n, w, &s.Cluster) })),
		mark(yamlpos.F("kubernetes", func(n ast.Node, w string) { s.Kubernetes = d.kubernetes(n, w) })),
		mark(yamlpos.F("container", func(n ast.Node, w string) { containerNode = n; d.container(n, w, &s.Container) })),
		mark(yamlpos.F("env", func(n ast.Node, w string) { d.env(n, w, &s.Env) })),
		mark(yamlpos.F("harness", func(n ast.Node, w string) { d.harness(n, w, &s.Harness) })),
		mark(yamlpos.F("topologies", func(n ast.Node, w string) { d.topologies(n, w, s) })),
		mark(yamlpos.F("geometries", func(n ast.Node, w string) { d.geometries(n, w, s) })),
		mark(yamlpos.F("matrix", func(n ast.Node, w string) { matrixNode = n })),
		mark(yamlpos.F("cases", func(n ast.Node, w string) { d.cases(n, w, s) })),
		mark(yamlpos.F("engines", func(n ast.Node, w string) { d.engines(n, w, s) })),
		mark(yamlpos.F("services", func(n ast.Node, w string) { s.Services = d.services(n, w) })),
		mark(yamlpos.F("telemetry", func(n ast.Node, w string) { s.Telemetry = d.telemetry(n, w) })),
		mark(yamlpos.F("cache", func(n ast.Node, w string) { s.Cache = d.cache(n, w) })),
		mark(yamlpos.F("search", func(n ast.Node, w string) { s.Search = d.search(n, w) })),
		mark(yamlpos.F("profile", func(n ast.Node, w string) { s.Profile = d.profile(n, w) })),
		mark(yamlpos.F("retry", func(n ast.Node, w string) { d.retry(n, w, &s.Retry) })),
	)
	for _, req := range []string{"version", "name", "harness", "topologies", "geometries", "matrix"} {
		if !seen[req] {
			d.Errorf(root, "missing required key %q", req)
		}
	}
	if matrixNode != nil {
		s.Matrix.Pos = yamlpos.PosOf(matrixNode)
		d.matrix(matrixNode, "matrix", s)
	}
	if yamlpos.IndexOf(Runtimes, s.Container.Runtime) >= 0 && s.Container.Runtime != "none" && s.Container.Image == "" {
		d.Errorf(containerNode, "container.image: required for runtime %q", s.Container.Runtime)
	}
	if s.Scheduler == "k8s" {
		switch {
		case s.Kubernetes == nil:
			d.Errorf(root, "scheduler k8s: missing required key \"kubernetes\" (at least its volume: where the pods find the sweep directory)")
		case s.Container.Image == "":
			d.Errorf(root, "scheduler k8s: container.image is required (the image every pod runs)")
		}
	}
	if len(d.Errs) > 0 {
		return nil, d.Errs
	}
	return s, nil
}

// retry reads retry: {infra: N}.
func (d *decoder) retry(n ast.Node, where string, r *Retry) {
	d.Fields(n, where, yamlpos.F("infra", func(n ast.Node, w string) {
		if r.Infra = d.Integer(n, w); r.Infra < 0 || r.Infra > MaxInfraRetries {
			d.Errorf(n, "%s: %d is out of range (expected an integer from 0 to %d)", w, r.Infra, MaxInfraRetries)
		}
	}))
}

func (d *decoder) name(n ast.Node, where string) string {
	v, ok := d.Scalar(n, where)
	if ok && !nameRE().MatchString(v.S) {
		d.Errorf(n, "%s: invalid name %q (expected lower-case letters, digits, '.', '_' or '-')", where, v.S)
	}
	return v.S
}

func (d *decoder) oneOf(n ast.Node, where string, allowed []string) string {
	v, ok := d.Scalar(n, where)
	if ok && yamlpos.IndexOf(allowed, v.S) < 0 {
		d.Errorf(n, "%s: unknown value %q (expected one of: %s)", where, v.S, strings.Join(allowed, ", "))
	}
	return v.S
}

// line is a value that ends up on one line of a job script (an #SBATCH
// option or a mount): it must not contain a newline.
func (d *decoder) line(n ast.Node, where string) string {
	v, ok := d.Scalar(n, where)
	if ok && strings.ContainsAny(v.S, "\r\n") {
		d.Errorf(n, "%s: %q contains a line break (expected a single line)", where, v.S)
	}
	return v.S
}

// sbatchLine is a value for an #SBATCH line of the job script, which sbatch
// splits at white space unless it is double-quoted: one line, and no
// double quote (render would have to refuse it later, with no position).
func (d *decoder) sbatchLine(n ast.Node, where string) string {
	v := d.line(n, where)
	if strings.Contains(v, `"`) {
		d.Errorf(n, "%s: %q contains a double quote, which an #SBATCH line cannot carry", where, v)
	}
	return v
}

// matching decodes a scalar that must match re, refused as not being what.
func (d *decoder) matching(re *regexp.Regexp, what string) func(ast.Node, string) string {
	return func(n ast.Node, w string) string {
		v, ok := d.Scalar(n, w)
		if ok && !re.MatchString(v.S) {
			d.ErrAt(v, "%s: %q is not %s", w, v.S, what)
		}
		return v.S
	}
}

// absPath decodes an absolute path without "..".
func (d *decoder) absPath(n ast.Node, w string) string {
	v := d.line(n, w)
	if !strings.HasPrefix(v, "/") || slices.Contains(strings.Split(v, "/"), "..") {
		d.Errorf(n, "%s: %q is not an absolute path without '..'", w, v)
	}
	return v
}

// telemetry reads telemetry: {endpoints: [URL...], interval: DURATION, gpu: ...}.
func (d *decoder) telemetry(n ast.Node, where string) *Telemetry {
	t := &Telemetry{Interval: DefaultTelemetryInterval, GPUInterval: DefaultGPUInterval}
	d.Fields(n, where,
		yamlpos.F("endpoints", func(n ast.Node, w string) {
			t.Endpoints = []string{} // [] is none: only those the harness lists
			for i, v := range d.StrList(n, w) {
				u, err := url.Parse(v.S)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(v.S, " \t\r\n") {
					d.ErrAt(v, "%s[%d]: %q is not an endpoint (expected an http:// or https:// URL, like %s)", w, i, v.S, DefaultTelemetryEndpoint)
				}
				t.Endpoints = append(t.Endpoints, v.S)
			}
		}),
		yamlpos.F("interval", func(n ast.Node, w string) {
			v, _ := d.Scalar(n, w)
			iv, err := time.ParseDuration(v.S)
			if err != nil || iv < time.Second || iv > 10*time.Minute {
				d.ErrAt(v, "%s: %q is not an interval (expected a duration from 1s to 10m, like 10s)", w, v.S)
			}
			t.Interval = iv
		}),
		yamlpos.F("gpu", func(n ast.Node, w string) { t.GPUInterval = d.gpu(n, w) }),
	)
	if t.Endpoints == nil {
		t.Endpoints = []string{DefaultTelemetryEndpoint}
	}
	return t
}

// templates reads a list of argv words and checks each parses as a template.
func (d *decoder) templates(items []ast.Node, where string) []Value {
	out := make([]Value, 0, len(items))
	for i, it := range items {
		wi := fmt.Sprintf("%s[%d]", where, i)
		v, ok := d.Scalar(it, wi)
		if !ok {
			continue
		}
		if _, err := template.New(wi).Option("missingkey=error").Parse(v.S); err != nil {
			d.Errorf(it, "%s: bad template %q: %v", wi, v.S, templateErr(err))
		}
		out = append(out, v)
	}
	return out
}

// templateErr drops text/template's "template: NAME:1: " prefix, which
// repeats what the position already says.
func templateErr(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "template: ") && i >= 0 {
		rest := msg[len("template: "):]
		if j := strings.Index(rest, ": "); j >= 0 {
			return strings.TrimPrefix(rest[j+2:], "executing \"\" at ")
		}
	}
	return msg
}

// expect reads a mapping of component to the commit an image must record.
func (d *decoder) expect(n ast.Node, w string) (map[string]string, []string) {
	m, keys := d.StrMap(n, w)
	for _, k := range keys {
		if !componentRE().MatchString(k) {
			d.Errorf(n, "%s: %q is not a component name (expected lower-case letters, digits and '_', like dynamo, vllm_adapter, kvcr)", w, k)
		}
		if !commitRE().MatchString(m[k]) {
			d.Errorf(n, "%s.%s: %q is not a commit (expected 40 hex digits)", w, k, m[k])
		}
	}
	return m, keys
}

// services reads a list of services (etcd, nats), each at most once.
func (d *decoder) services(n ast.Node, w string) []string {
	out := []string{}
	for i, v := range d.StrList(n, w) {
		switch {
		case yamlpos.IndexOf(Services, v.S) < 0:
			d.ErrAt(v, "%s[%d]: unknown service %q (expected one of: %s)", w, i, v.S, strings.Join(Services, ", "))
		case slices.Contains(out, v.S):
			d.ErrAt(v, "%s[%d]: %q is listed twice", w, i, v.S)
		default:
			out = append(out, v.S)
		}
	}
	return out
}
