package matrix

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
	"github.com/kvsweep/kvsweep/rules"
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
		mark(yamlpos.F("retry", func(n ast.Node, w string) {
			d.Fields(n, w, yamlpos.F("infra", func(n ast.Node, w string) {
				if s.Retry.Infra = d.Integer(n, w); s.Retry.Infra < 0 || s.Retry.Infra > MaxInfraRetries {
					d.Errorf(n, "%s: %d is out of range (expected an integer from 0 to %d)", w, s.Retry.Infra, MaxInfraRetries)
				}
			}))
		})),
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

func (d *decoder) cluster(n ast.Node, where string, c *Cluster) {
	d.Fields(n, where,
		yamlpos.F("partition", func(n ast.Node, w string) { c.Partition = d.sbatchLine(n, w) }),
		yamlpos.F("account", func(n ast.Node, w string) { c.Account = d.sbatchLine(n, w) }),
		yamlpos.F("qos", func(n ast.Node, w string) { c.QOS = d.sbatchLine(n, w) }),
		yamlpos.F("reservation", func(n ast.Node, w string) { c.Reservation = d.sbatchLine(n, w) }),
		yamlpos.F("constraint", func(n ast.Node, w string) { c.Constraint = d.sbatchLine(n, w) }),
		yamlpos.F("max_queued", func(n ast.Node, w string) {
			if c.MaxQueued = d.Integer(n, w); c.MaxQueued < 1 {
				d.Errorf(n, "%s: %d is not a number of tasks (expected 1 or more)", w, c.MaxQueued)
			}
		}),
		yamlpos.F("sbatch", func(n ast.Node, w string) {
			for i, it := range d.List(n, w) {
				wi := fmt.Sprintf("%s[%d]", w, i)
				v := d.sbatchLine(it, wi)
				if v != "" && !strings.HasPrefix(v, "--") {
					d.Errorf(it, "%s: %q is not a long sbatch option (expected --NAME or --NAME=VALUE)", wi, v)
				}
				c.Extra = append(c.Extra, v)
			}
		}),
	)
}

var (
	dnsLabelRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`) })
	dnsSubdomainRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`) })
	labelKeyRE     = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	})
	labelValueRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`) })
	secretKeyRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-._A-Za-z0-9]{1,253}$`) })
)

// kubernetes reads the kubernetes section (scheduler k8s).
func (d *decoder) kubernetes(n ast.Node, where string) *Kubernetes {
	k := &Kubernetes{Namespace: "default", Pos: yamlpos.PosOf(n)}
	dnsName := d.matching(dnsSubdomainRE(), "a Kubernetes name (lower-case letters, digits, '-' and '.', at most 253)")
	d.Fields(n, where,
		yamlpos.F("namespace", func(n ast.Node, w string) {
			k.Namespace = d.matching(dnsLabelRE(), "a namespace name (lower-case letters, digits and '-', at most 63)")(n, w)
		}),
		yamlpos.F("volume", func(n ast.Node, w string) { d.kubeVolume(n, w, k) }),
		yamlpos.F("node_selector", func(n ast.Node, w string) {
			k.NodeSelector = map[string]string{}
			for _, kv := range d.Mapping(n, w) {
				if !labelKeyRE().MatchString(kv.Key) {
					d.Errorf(kv.KeyN, "%s: %q is not a label key", w, kv.Key)
				}
				k.NodeSelector[kv.Key] = d.matching(labelValueRE(), "a label value")(kv.Value, yamlpos.Join(w, kv.Key))
			}
		}),
		yamlpos.F("tolerations", func(n ast.Node, w string) { k.Tolerations = d.tolerations(n, w) }),
		yamlpos.F("secrets", func(n ast.Node, w string) { k.Secrets = d.secrets(n, w) }),
		yamlpos.F("service_account", func(n ast.Node, w string) { k.ServiceAccount = dnsName(n, w) }),
		yamlpos.F("runtime_class", func(n ast.Node, w string) { k.RuntimeClass = dnsName(n, w) }),
		yamlpos.F("overlays", func(n ast.Node, w string) {
			for i, v := range d.StrList(n, w) {
				if v.S == "" || strings.ContainsAny(v.S, "\r\n") {
					d.ErrAt(v, "%s[%d]: %q is not a file name", w, i, v.S)
				}
				k.Overlays = append(k.Overlays, v.S)
			}
		}),
	)
	if k.Path == "" && len(d.Errs) == 0 {
		d.Errorf(n, "%s: missing required key \"volume\" (the volume that holds the sweep directory: claim or host_path)", where)
	}
	return k
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

// kubeVolume decodes kubernetes.volume: a claim with the path it is
// mounted at, or a host path (mounted at the same path by default).
func (d *decoder) kubeVolume(n ast.Node, w string, k *Kubernetes) {
	k.VolumePos = yamlpos.PosOf(n)
	d.Fields(n, w,
		yamlpos.F("claim", func(n ast.Node, w string) {
			k.Claim = d.matching(dnsSubdomainRE(), "a Kubernetes name (lower-case letters, digits, '-' and '.', at most 253)")(n, w)
		}),
		yamlpos.F("host_path", func(n ast.Node, w string) { k.HostPath = d.absPath(n, w) }),
		yamlpos.F("path", func(n ast.Node, w string) { k.Path = d.absPath(n, w) }),
	)
	switch {
	case k.Claim != "" && k.HostPath != "":
		d.Errorf(n, "%s: both claim and host_path (expected one: the volume that holds the sweep directory)", w)
	case k.Claim == "" && k.HostPath == "" && len(d.Errs) == 0:
		d.Errorf(n, "%s: expected claim (a PersistentVolumeClaim) or host_path (a directory on every node)", w)
	case k.Claim != "" && k.Path == "" && len(d.Errs) == 0:
		d.Errorf(n, "%s: a claim needs path: where the volume is mounted, in the pods and on this machine", w)
	case k.Path == "":
		k.Path = k.HostPath
	}
}

// tolerations decodes kubernetes.tolerations.
func (d *decoder) tolerations(n ast.Node, w string) []Toleration {
	var out []Toleration
	for i, it := range d.List(n, w) {
		wi := fmt.Sprintf("%s[%d]", w, i)
		var t Toleration
		d.Fields(it, wi,
			yamlpos.F("key", func(n ast.Node, w string) {
				if t.Key = d.Str(n, w); t.Key != "" && !labelKeyRE().MatchString(t.Key) {
					d.Errorf(n, "%s: %q is not a taint key", w, t.Key)
				}
			}),
			yamlpos.F("operator", func(n ast.Node, w string) { t.Operator = d.oneOf(n, w, []string{"Equal", "Exists"}) }),
			yamlpos.F("value", func(n ast.Node, w string) { t.Value = d.matching(labelValueRE(), "a taint value")(n, w) }),
			yamlpos.F("effect", func(n ast.Node, w string) {
				t.Effect = d.oneOf(n, w, []string{"NoSchedule", "PreferNoSchedule", "NoExecute"})
			}),
		)
		out = append(out, t)
	}
	return out
}

// secrets decodes kubernetes.secrets: NAME: SECRET/KEY.
func (d *decoder) secrets(n ast.Node, w string) []SecretEnv {
	var out []SecretEnv
	for _, kv := range d.Mapping(n, w) {
		wk := yamlpos.Join(w, kv.Key)
		if !envRE().MatchString(kv.Key) {
			d.Errorf(kv.KeyN, "%s: %q is not an environment variable name", w, kv.Key)
		}
		v, _ := d.Scalar(kv.Value, wk)
		secret, key, ok := strings.Cut(v.S, "/")
		if !ok || !dnsSubdomainRE().MatchString(secret) || !secretKeyRE().MatchString(key) {
			d.ErrAt(v, "%s: %q is not SECRET/KEY (a secret's name, then the key of the value in it)", wk, v.S)
		}
		out = append(out, SecretEnv{Name: kv.Key, Secret: secret, Key: key})
	}
	return out
}

func (d *decoder) container(n ast.Node, where string, c *Container) {
	var stagingN, userN ast.Node
	d.Fields(n, where,
		yamlpos.F("runtime", func(n ast.Node, w string) { c.Runtime = d.oneOf(n, w, Runtimes) }),
		yamlpos.F("image", func(n ast.Node, w string) {
			c.Image = d.line(n, w)
			if c.Image != "" && !imageRE().MatchString(c.Image) {
				d.Errorf(n, "%s: %q is not an image reference or file (expected REGISTRY/NAME[:TAG][@sha256:...], or a path to a .sqsh or .sif file, with no spaces and not starting with '-')", w, c.Image)
			}
		}),
		yamlpos.F("workdir", func(n ast.Node, w string) {
			if c.Workdir = d.line(n, w); strings.HasPrefix(c.Workdir, "-") {
				d.Errorf(n, "%s: %q starts with '-' (expected a directory path)", w, c.Workdir)
			}
		}),
		yamlpos.F("expect", func(n ast.Node, w string) { c.Expect, c.ExpectKeys = d.expect(n, w) }),
		yamlpos.F("pins", func(n ast.Node, w string) { c.Pins = d.line(n, w) }),
		yamlpos.F("userns", func(n ast.Node, w string) { c.Userns = d.Bool(n, w) }),
		yamlpos.F("user", func(n ast.Node, w string) {
			userN = n
			if c.User = d.line(n, w); !userRE().MatchString(c.User) {
				d.Errorf(n, "%s: %q is not a user (expected submitter, root, image, or UID[:GID] in digits)", w, c.User)
			}
		}),
		yamlpos.F("staging", func(n ast.Node, w string) {
			stagingN = n
			if c.Staging = d.line(n, w); c.Staging == "" || strings.HasPrefix(c.Staging, "-") {
				d.Errorf(n, "%s: %q is not a directory (expected a path, absolute or relative to the sweep directory, or %q)", w, c.Staging, StagingNone)
			}
		}),
		yamlpos.F("mounts", func(n ast.Node, w string) {
			for i, it := range d.List(n, w) {
				wi := fmt.Sprintf("%s[%d]", w, i)
				if _, ok := d.Resolve(it).(*ast.StringNode); !ok {
					d.Errorf(it, "%s: expected a mount SRC:DST[:FLAGS] as a string, got %s (quote it in a flow list)", wi, yamlpos.KindName(d.Resolve(it)))
					continue
				}
				v := d.line(it, wi)
				parts := strings.Split(v, ":")
				if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || strings.Contains(v, ",") {
					d.Errorf(it, "%s: bad mount %q (expected SRC:DST or SRC:DST:FLAGS, no commas)", wi, v)
				}
				c.Mounts = append(c.Mounts, v)
			}
		}),
	)
	if userN != nil && slices.Contains(StagedRuntimes, c.Runtime) && c.User != UserSubmitter && c.User != UserRoot && userRE().MatchString(c.User) {
		d.Errorf(userN, "%s: runtime %s runs the container as the submitting user (or as root inside it, user: root); %q would have no effect (it is for docker and Kubernetes)", yamlpos.Join(where, "user"), c.Runtime, c.User)
	}
	if stagingN != nil && c.Staging != StagingNone && !slices.Contains(StagedRuntimes, c.Runtime) {
		rt := cmp.Or(c.Runtime, "none")
		d.Errorf(stagingN, "%s: runtime %s imports no image file (only %s stage one); remove staging", yamlpos.Join(where, "staging"), rt, strings.Join(StagedRuntimes, ", "))
	}
}

func (d *decoder) env(n ast.Node, where string, e *Env) {
	d.Fields(n, where,
		yamlpos.F("pass", func(n ast.Node, w string) {
			for i, it := range d.List(n, w) {
				wi := fmt.Sprintf("%s[%d]", w, i)
				v, ok := d.Scalar(it, wi)
				if ok && !envRE().MatchString(v.S) {
					d.Errorf(it, "%s: %q is not an environment variable name", wi, v.S)
				}
				e.Pass = append(e.Pass, v.S)
			}
		}),
		yamlpos.F("set", func(n ast.Node, w string) {
			for _, kv := range d.Mapping(n, w) {
				wk := yamlpos.Join(w, kv.Key)
				switch {
				case !envRE().MatchString(kv.Key):
					d.Errorf(kv.KeyN, "%s: %q is not an environment variable name", w, kv.Key)
				case secretRE().MatchString(kv.Key):
					d.Errorf(kv.KeyN, "%s: %q looks like a secret; list it under env.pass so its value is taken from the environment at run time and never written", w, kv.Key)
				}
				if v, ok := d.Scalar(kv.Value, wk); ok {
					if e.Set == nil {
						e.Set = map[string]string{}
					}
					e.Set[kv.Key] = v.S
				}
			}
			e.SetKeys = slices.Sorted(maps.Keys(e.Set))
		}),
	)
}

func (d *decoder) harness(n ast.Node, where string, h *Harness) {
	d.Fields(n, where,
		yamlpos.F("command", func(n ast.Node, w string) {
			items := d.List(n, w)
			if len(items) == 0 && len(d.Errs) == 0 {
				d.Errorf(n, "%s: empty (expected the harness argv, for example [python3, -m, tests.e2e.phase1])", w)
			}
			h.Command = d.templates(items, w)
		}),
		yamlpos.F("cases_flag", func(n ast.Node, w string) { h.CasesFlag = d.Str(n, w) }),
		yamlpos.F("result_adapter", func(n ast.Node, w string) {
			for i, v := range d.StrList(n, w) {
				if i == 0 && (v.S == "" || strings.HasPrefix(v.S, "-")) {
					d.ErrAt(v, "%s[0]: %q is not a command (expected the adapter program, like python3 or /opt/kvcr/adapter.py)", w, v.S)
				}
				h.ResultAdapter = append(h.ResultAdapter, v.S)
			}
			if len(h.ResultAdapter) == 0 && len(d.Errs) == 0 {
				d.Errorf(n, "%s: empty (expected the adapter's argv; it gets the cell directory as its last argument)", w)
			}
		}),
		yamlpos.F("native_result", func(n ast.Node, w string) { h.Native = d.native(n, w) }),
		yamlpos.F("result", func(n ast.Node, w string) {
			if h.Client = d.client(n, w); h.Native != nil {
				d.Errorf(n, "%s: a cell's result comes from one place: remove native_result or result", w)
			}
		}),
	)
	if h.Command == nil && len(d.Errs) == 0 {
		d.Errorf(n, "%s: missing required key \"command\"", where)
	}
}

var pointerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(/([^/~]|~[01])*)*$`) })

// native reads harness.native_result: {file, cases: {ID|*: {verdict,
// message, metrics: {NAME: {pointer, unit, direction, scale}}}}}.
func (d *decoder) native(n ast.Node, where string) *NativeResult {
	nr := &NativeResult{Cases: map[string]NativeCase{}}
	ptr := func(n ast.Node, w string) string {
		v, _ := d.Scalar(n, w)
		if p := strings.ReplaceAll(v.S, "{case}", "x"); !pointerRE().MatchString(p) || v.S == "" {
			d.ErrAt(v, "%s: %q is not a JSON pointer (expected /key/0/key, with {case} for the case id)", w, v.S)
		}
		return v.S
	}
	d.Fields(n, where,
		yamlpos.F("file", func(n ast.Node, w string) {
			nr.File = d.line(n, w)
			if nr.File == "" || strings.HasPrefix(nr.File, "/") || slices.Contains(strings.Split(nr.File, "/"), "..") {
				d.Errorf(n, "%s: %q is not a path inside the cell directory (expected a relative path without ..)", w, nr.File)
			}
		}),
		yamlpos.F("cases", func(n ast.Node, w string) {
			for _, kv := range d.Mapping(n, w) {
				wc := yamlpos.Join(w, kv.Key)
				var c NativeCase
				d.Fields(kv.Value, wc,
					yamlpos.F("verdict", func(n ast.Node, w string) { c.Verdict = ptr(n, w) }),
					yamlpos.F("message", func(n ast.Node, w string) { c.Message = ptr(n, w) }),
					yamlpos.F("metrics", func(n ast.Node, w string) {
						c.Metrics = map[string]NativeMetric{}
						for _, mk := range d.Mapping(n, w) {
							wm := yamlpos.Join(w, mk.Key)
							m := NativeMetric{Scale: 1}
							d.Fields(mk.Value, wm,
								yamlpos.F("pointer", func(n ast.Node, w string) { m.Pointer = ptr(n, w) }),
								yamlpos.F("unit", func(n ast.Node, w string) { m.Unit = d.Str(n, w) }),
								yamlpos.F("direction", func(n ast.Node, w string) { m.Direction = d.oneOf(n, w, []string{"lower", "higher"}) }),
								yamlpos.F("scale", func(n ast.Node, w string) {
									v, _ := d.Scalar(n, w)
									f, err := strconv.ParseFloat(v.S, 64)
									if err != nil || f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
										d.ErrAt(v, "%s: %q is not a factor (expected a finite non-zero number, like 1000 for s to ms)", w, v.S)
									}
									m.Scale = f
								}),
							)
							if m.Pointer == "" && len(d.Errs) == 0 {
								d.Errorf(mk.KeyN, "%s: missing required key \"pointer\"", wm)
							}
							c.Metrics[mk.Key] = m
						}
					}),
				)
				if c.Verdict == "" && len(d.Errs) == 0 {
					d.Errorf(kv.KeyN, "%s: missing required key \"verdict\"", wc)
				}
				nr.Cases[kv.Key] = c
			}
		}),
	)
	if nr.File == "" && len(d.Errs) == 0 {
		d.Errorf(n, "%s: missing required key \"file\"", where)
	}
	return nr
}

// telemetry reads telemetry: {endpoints: [URL...], interval: DURATION}.
func (d *decoder) telemetry(n ast.Node, where string) *Telemetry {
	t := &Telemetry{Interval: DefaultTelemetryInterval}
	d.Fields(n, where,
		yamlpos.F("endpoints", func(n ast.Node, w string) {
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
	)
	if t.Endpoints == nil {
		t.Endpoints = []string{DefaultTelemetryEndpoint}
	}
	return t
}

// client reads harness.result: {format, file, case_by, cases: {ID: VALUE}}.
func (d *decoder) client(n ast.Node, where string) *ClientResult {
	cr := &ClientResult{}
	var casesN ast.Node
	d.Fields(n, where,
		yamlpos.F("format", func(n ast.Node, w string) { cr.Format = d.oneOf(n, w, ClientFormats) }),
		yamlpos.F("file", func(n ast.Node, w string) {
			cr.File = d.line(n, w)
			if cr.File == "" || strings.HasPrefix(cr.File, "/") || slices.Contains(strings.Split(cr.File, "/"), "..") {
				d.Errorf(n, "%s: %q is not a path inside the cell directory (expected a relative path without ..)", w, cr.File)
			}
		}),
		yamlpos.F("case_by", func(n ast.Node, w string) { cr.CaseBy = d.oneOf(n, w, ClientCaseBys) }),
		yamlpos.F("cases", func(n ast.Node, w string) { casesN = n; cr.Values, _ = d.StrMap(n, w) }),
	)
	for _, k := range []string{"format", "file"} {
		if (k == "format" && cr.Format == "" || k == "file" && cr.File == "") && len(d.Errs) == 0 {
			d.Errorf(n, "%s: missing required key %q", where, k)
		}
	}
	byValue := cr.CaseBy == "request_rate" || cr.CaseBy == "max_concurrency"
	switch {
	case byValue && casesN == nil && len(d.Errs) == 0:
		d.Errorf(n, "%s: case_by %s needs cases: {CASE: VALUE} (the %s of each case's run)", where, cr.CaseBy, cr.CaseBy)
	case !byValue && casesN != nil:
		d.Errorf(casesN, "%s: cases gives the value of each case's run for case_by request_rate or max_concurrency, not %s; remove cases", yamlpos.Join(where, "cases"), cmp.Or(cr.CaseBy, "line"))
	}
	return cr
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

func (d *decoder) topologies(n ast.Node, where string, s *Spec) {
	entries := d.Mapping(n, where)
	if len(entries) == 0 && len(d.Errs) == 0 {
		d.Errorf(n, "%s: empty (expected at least one topology)", where)
	}
	for _, e := range entries {
		w := yamlpos.Join(where, e.Key)
		if !nameRE().MatchString(e.Key) {
			d.Errorf(e.KeyN, "%s: invalid topology name %q (expected lower-case letters, digits, '.', '_' or '-')", where, e.Key)
		}
		var workersN, agentN, placementN ast.Node
		t := &Topology{Name: e.Key, Kind: "aggregated", Workers: 2,
			Resources: Resources{Nodes: 1, CPUsPerTask: 1, Time: defaultTime}}
		kindSet := false
		d.Fields(e.Value, w,
			yamlpos.F("kind", func(n ast.Node, w string) { t.Kind = d.oneOf(n, w, TopologyKinds); kindSet = true }),
			yamlpos.F("resources", func(n ast.Node, w string) { d.resources(n, w, &t.Resources) }),
			yamlpos.F("args", func(n ast.Node, w string) { t.Args = d.templates(d.List(n, w), w) }),
			yamlpos.F("agent", func(n ast.Node, w string) { agentN, t.Agent = n, d.templates(d.List(n, w), w) }),
			yamlpos.F("service", func(n ast.Node, w string) { t.Service = d.templates(d.List(n, w), w) }),
			yamlpos.F("require", func(n ast.Node, w string) { t.Require = d.rules(n, w) }),
			yamlpos.F("verdicts_only", func(n ast.Node, w string) { t.VerdictsOnly = d.Bool(n, w) }),
			yamlpos.F("placement", func(n ast.Node, w string) { placementN, t.Placement = n, d.placement(n, w) }),
			yamlpos.F("workers", func(n ast.Node, w string) {
				workersN = n
				if t.Workers = d.Integer(n, w); t.Workers < 1 || t.Workers > MaxGPUsPerNode {
					d.Errorf(n, "%s: %d is out of range (expected an integer from 1 to %d)", w, t.Workers, MaxGPUsPerNode)
				}
			}),
		)
		if !kindSet && yamlpos.IndexOf(TopologyKinds, e.Key) >= 0 {
			t.Kind = e.Key // a topology named after a kind is of that kind
		}
		if t.Kind == "disagg-2p1d" && workersN == nil {
			t.Workers = 3 // two prefill workers and a decode worker
		}
		d.checkKind(e.KeyN, w, t)
		d.checkEffect(w, t, workersN, agentN)
		d.checkPlacement(w, t, placementN)
		s.Topologies[e.Key] = t
		s.TopologyOrder = append(s.TopologyOrder, e.Key)
	}
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

// engines reads the engines mapping: name -> {harness, args, env, image,
// expect}.
func (d *decoder) engines(n ast.Node, where string, s *Spec) {
	s.Engines = map[string]*Engine{}
	entries := d.Mapping(n, where)
	if len(entries) == 0 && len(d.Errs) == 0 {
		d.Errorf(n, "%s: empty (expected at least one engine, or no engines key for the built-in %s)", where, strings.Join(Engines, ", "))
	}
	for _, e := range entries {
		w := yamlpos.Join(where, e.Key)
		if !nameRE().MatchString(e.Key) {
			d.Errorf(e.KeyN, "%s: invalid engine name %q (expected lower-case letters, digits, '.', '_' or '-')", where, e.Key)
		}
		en := &Engine{Name: e.Key}
		d.Fields(e.Value, w,
			yamlpos.F("harness", func(n ast.Node, w string) {
				items := d.List(n, w)
				if len(items) == 0 && len(d.Errs) == 0 {
					d.Errorf(n, "%s: empty (expected the engine's harness argv, or no harness key for harness.command)", w)
				}
				en.Harness = d.templates(items, w)
			}),
			yamlpos.F("args", func(n ast.Node, w string) { en.Args = d.templates(d.List(n, w), w) }),
			yamlpos.F("env", func(n ast.Node, w string) { d.env(n, w, &en.Env) }),
			yamlpos.F("image", func(n ast.Node, w string) {
				if en.Image = d.Str(n, w); !imageRE().MatchString(en.Image) || strings.HasPrefix(en.Image, "-") {
					d.Errorf(n, "%s: %q is not an image reference or file (expected REGISTRY/NAME[:TAG][@sha256:...], or a path to a .sqsh or .sif file, with no spaces and not starting with '-')", w, en.Image)
				}
			}),
			yamlpos.F("expect", func(n ast.Node, w string) { en.Expect, en.ExpectKeys = d.expect(n, w) }),
			yamlpos.F("services", func(n ast.Node, w string) {
				svc := d.services(n, w)
				en.Services = &svc
			}),
			yamlpos.F("unsupported", func(n ast.Node, w string) {
				d.Fields(n, w,
					yamlpos.F("cases", func(n ast.Node, w string) {
						for i, v := range d.StrList(n, w) {
							d.checkAxisValue(v, fmt.Sprintf("%s[%d]", w, i), AxisCase, s)
							en.Unsupported.Cases = append(en.Unsupported.Cases, v)
						}
					}),
					yamlpos.F("kinds", func(n ast.Node, w string) {
						for i, v := range d.StrList(n, w) {
							if yamlpos.IndexOf(TopologyKinds, v.S) < 0 {
								d.ErrAt(v, "%s[%d]: unknown topology kind %q (expected one of: %s)", w, i, v.S, strings.Join(TopologyKinds, ", "))
							}
							en.Unsupported.Kinds = append(en.Unsupported.Kinds, v)
						}
					}),
				)
			}),
		)
		s.Engines[e.Key] = en
		s.EngineOrder = append(s.EngineOrder, e.Key)
	}
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

// cases reads the cases mapping: case id -> {require: [RULE, ...]}.
func (d *decoder) cases(n ast.Node, where string, s *Spec) {
	for _, e := range d.Mapping(n, where) {
		w := yamlpos.Join(where, e.Key)
		c := &Case{ID: e.Key, Pos: yamlpos.PosOf(e.KeyN)}
		d.Fields(e.Value, w, yamlpos.F("require", func(n ast.Node, w string) { c.Require = d.rules(n, w) }))
		s.Cases[e.Key] = c
	}
}

// rules reads a list of validity rules (package rules), each refused at
// its own position.
func (d *decoder) rules(n ast.Node, where string) []rules.Rule {
	var out []rules.Rule
	for i, item := range d.List(n, where) {
		w := fmt.Sprintf("%s[%d]", where, i)
		v, ok := d.Scalar(item, w)
		if !ok {
			continue
		}
		r, err := rules.Parse(v.S)
		if err != nil {
			d.Errorf(item, "%s: %v", w, err)
			continue
		}
		out = append(out, r)
	}
	return out
}

// checkKind enforces what each job template needs from its resources.
func (d *decoder) checkKind(n ast.Node, where string, t *Topology) {
	r := t.Resources
	switch t.Kind {
	case "two-node":
		if r.Nodes != 2 {
			d.Errorf(n, "%s: kind two-node needs resources.nodes: 2, got %d", where, r.Nodes)
		}
		if len(t.Agent) == 0 {
			d.Errorf(n, "%s: kind two-node needs an agent command (the node agent started on the second node)", where)
		}
	case "sidecar":
		if len(t.Service) == 0 {
			d.Errorf(n, "%s: kind sidecar needs a service command (the kvcr_service each worker gets a container of)", where)
		}
	case "disagg-2p1d":
		if r.GPUsPerNode < 2 {
			d.Errorf(n, "%s: kind disagg-2p1d needs at least 2 GPUs (3, or 2 shared with --gpus 0,0,1), got %d", where, r.GPUsPerNode)
		}
	}
	if t.Kind != "two-node" && r.Nodes != 1 {
		d.Errorf(n, "%s: kind %s runs on one node, got resources.nodes: %d", where, t.Kind, r.Nodes)
	}
}

// checkEffect refuses the keys of a topology that would do nothing where
// they are written: an agent on a kind that starts none, workers on a
// kind whose workers are fixed, or with no service to start one per
// worker. workersN and agentN are the keys' values, nil when not given.
func (d *decoder) checkEffect(where string, t *Topology, workersN, agentN ast.Node) {
	if agentN != nil && t.Kind != "two-node" {
		d.Errorf(agentN, "%s: kind %s starts no agent (only two-node does, on its second node); remove agent", yamlpos.Join(where, "agent"), t.Kind)
	}
	switch {
	case workersN == nil:
	case t.Kind == "two-node":
		d.Errorf(workersN, "%s: a two-node topology's workers are those its placement puts on its nodes (one a node without); remove workers", yamlpos.Join(where, "workers"))
	case len(t.Service) == 0:
		d.Errorf(workersN, "%s: workers is how many kvcr_service containers the job starts, one a worker, and %s has no service; remove workers or add service", yamlpos.Join(where, "workers"), where)
	}
}

// placement reads a two-node topology's placement: {head: [0, 1],
// remote: [2], gpus: [0, 0, 0]}.
func (d *decoder) placement(n ast.Node, where string) *Placement {
	p := &Placement{}
	ints := func(n ast.Node, w string) []int {
		var out []int
		for _, item := range d.List(n, w) {
			out = append(out, d.Integer(item, w))
		}
		return out
	}
	d.Fields(n, where,
		yamlpos.F("head", func(n ast.Node, w string) { p.Head = ints(n, w) }),
		yamlpos.F("remote", func(n ast.Node, w string) { p.Remote = ints(n, w) }),
		yamlpos.F("gpus", func(n ast.Node, w string) { p.GPUs = ints(n, w) }),
	)
	workers := len(p.Head) + len(p.Remote)
	seen := make([]bool, workers)
	for _, side := range []struct {
		name string
		idx  []int
	}{{"head", p.Head}, {"remote", p.Remote}} {
		if len(side.idx) == 0 {
			d.Errorf(n, "%s: %s places no worker (each node runs at least one)", where, side.name)
		}
		for _, i := range side.idx {
			switch {
			case i < 0 || i >= workers:
				d.Errorf(n, "%s.%s: worker %d is out of range (expected 0 to %d: the workers are numbered from 0 across both nodes)", where, side.name, i, workers-1)
			case seen[i]:
				d.Errorf(n, "%s.%s: worker %d is placed twice", where, side.name, i)
			default:
				seen[i] = true
			}
		}
	}
	if p.GPUs != nil && len(p.GPUs) != workers {
		d.Errorf(n, "%s.gpus: %d GPUs for %d workers (expected one a worker, in worker order)", where, len(p.GPUs), workers)
	}
	return p
}

// checkPlacement refuses a placement on a kind with one node, and GPUs a
// node does not have.
func (d *decoder) checkPlacement(where string, t *Topology, n ast.Node) {
	switch {
	case n == nil:
	case t.Kind != "two-node":
		d.Errorf(n, "%s: kind %s runs on one node; placement is for kind two-node", yamlpos.Join(where, "placement"), t.Kind)
	default:
		t.Workers = len(t.Placement.Head) + len(t.Placement.Remote)
		for i, g := range t.Placement.GPUs {
			if g < 0 || g >= t.Resources.GPUsPerNode {
				d.Errorf(n, "%s.gpus: worker %d on GPU %d, but resources.gpus_per_node is %d (GPUs are numbered from 0 on each node)", yamlpos.Join(where, "placement"), i, g, t.Resources.GPUsPerNode)
			}
		}
	}
}

func (d *decoder) resources(n ast.Node, where string, r *Resources) {
	inRange := func(n ast.Node, w string, min, max int) int {
		v := d.Integer(n, w)
		if v < min || v > max {
			d.Errorf(n, "%s: %d is out of range (expected an integer from %d to %d)", w, v, min, max)
		}
		return v
	}
	d.Fields(n, where,
		yamlpos.F("nodes", func(n ast.Node, w string) { r.Nodes = inRange(n, w, 1, MaxNodes) }),
		yamlpos.F("gpus_per_node", func(n ast.Node, w string) { r.GPUsPerNode = inRange(n, w, 0, MaxGPUsPerNode) }),
		yamlpos.F("cpus_per_task", func(n ast.Node, w string) { r.CPUsPerTask = inRange(n, w, 1, MaxCPUsPerTask) }),
		yamlpos.F("mem", func(n ast.Node, w string) {
			v, ok := d.Scalar(n, w)
			if ok && !memRE().MatchString(v.S) {
				d.Errorf(n, "%s: bad memory size %q (expected a number with an optional K, M, G or T suffix, like 64G)", w, v.S)
			}
			r.Mem = v.S
		}),
		yamlpos.F("time", func(n ast.Node, w string) {
			v, ok := d.Scalar(n, w)
			if !ok {
				return
			}
			t, err := ParseDuration(v.S)
			if err != nil {
				d.Errorf(n, "%s: bad duration %q (expected a duration like 90m or 1h30m, or Slurm's [D-]HH:MM:SS)", w, v.S)
			}
			r.Time = t
		}),
	)
}

func (d *decoder) geometries(n ast.Node, where string, s *Spec) {
	entries := d.Mapping(n, where)
	if len(entries) == 0 && len(d.Errs) == 0 {
		d.Errorf(n, "%s: empty (expected at least one geometry preset)", where)
	}
	for _, e := range entries {
		w := yamlpos.Join(where, e.Key)
		if !nameRE().MatchString(e.Key) {
			d.Errorf(e.KeyN, "%s: invalid geometry name %q (expected lower-case letters, digits, '.', '_' or '-')", where, e.Key)
		}
		g := &Geometry{Name: e.Key, Flags: map[string]string{}}
		d.Fields(e.Value, w,
			yamlpos.F("flags", func(n ast.Node, w string) { g.Flags, g.Keys = d.StrMap(n, w) }),
		)
		s.Geometries[e.Key] = g
		s.GeometryOrder = append(s.GeometryOrder, e.Key)
	}
}

func (d *decoder) matrix(n ast.Node, where string, s *Spec) {
	m := &s.Matrix
	for _, e := range d.Mapping(n, where) {
		w := yamlpos.Join(where, e.Key)
		switch e.Key {
		case "exclude":
			m.Exclude = d.entries(e.Value, w)
			continue
		case "include":
			m.Include = d.entries(e.Value, w)
			continue
		}
		if !axisRE().MatchString(e.Key) {
			d.Errorf(e.KeyN, "%s: invalid axis name %q (expected lower-case letters, digits and '_')", where, e.Key)
			continue
		}
		ax := Axis{Name: e.Key, Pos: yamlpos.PosOf(e.KeyN)}
		ax.Values = d.StrList(e.Value, w)
		if len(ax.Values) == 0 && d.Resolve(e.Value) != nil {
			if _, ok := d.Resolve(e.Value).(*ast.SequenceNode); ok {
				d.Errorf(e.Value, "%s: empty axis (expected at least one value)", w)
			}
		}
		dup := map[string]bool{}
		for _, v := range ax.Values {
			if dup[v.S] {
				d.ErrAt(v, "%s: duplicate value %q", w, v.S)
			}
			dup[v.S] = true
			d.checkAxisValue(v, w, e.Key, s)
		}
		m.Axes = append(m.Axes, ax)
	}
	for _, req := range []string{AxisEngine, AxisTopology, AxisGeometry, AxisCase} {
		if m.axis(req) == nil {
			d.Errorf(n, "%s: missing required axis %q", where, req)
		}
	}
}

// checkAxisValue validates a value of a named axis against its domain.
func (d *decoder) checkAxisValue(v Value, where, axis string, s *Spec) {
	switch axis {
	case AxisEngine:
		switch {
		case s.Engines != nil && s.Engines[v.S] == nil:
			d.ErrAt(v, "%s: unknown engine %q (defined under engines: %s)", where, v.S, strings.Join(s.EngineOrder, ", "))
		case s.Engines == nil && yamlpos.IndexOf(Engines, v.S) < 0:
			d.ErrAt(v, "%s: unknown value %q (expected one of: %s, or an engine defined under engines)", where, v.S, strings.Join(Engines, ", "))
		}
	case AxisTopology:
		if s.Topologies[v.S] == nil {
			d.ErrAt(v, "%s: unknown topology %q (defined: %s)", where, v.S, strings.Join(s.TopologyOrder, ", "))
		}
	case AxisGeometry:
		if s.Geometries[v.S] == nil {
			d.ErrAt(v, "%s: unknown geometry %q (defined: %s)", where, v.S, strings.Join(s.GeometryOrder, ", "))
		}
	case AxisCase:
		if v.S == "" || strings.ContainsAny(v.S, ", \t\r\n") {
			d.ErrAt(v, "%s: bad case id %q (expected an id like TC-01, without commas or spaces)", where, v.S)
		}
	}
}

// entries decodes exclude/include: a list of mappings of scalars.
func (d *decoder) entries(n ast.Node, where string) []Entry {
	var out []Entry
	for i, it := range d.List(n, where) {
		wi := fmt.Sprintf("%s[%d]", where, i)
		e := Entry{Values: map[string]Value{}, KeyPos: map[string]Pos{}, Pos: yamlpos.PosOf(it)}
		for _, kv := range d.Mapping(it, wi) {
			if v, ok := d.Scalar(kv.Value, yamlpos.Join(wi, kv.Key)); ok {
				e.Keys = append(e.Keys, kv.Key)
				e.Values[kv.Key] = v
				e.KeyPos[kv.Key] = yamlpos.PosOf(kv.KeyN)
			}
		}
		if len(e.Keys) == 0 && len(d.Errs) == 0 {
			d.Errorf(it, "%s: empty entry (expected axis: value pairs)", wi)
		}
		out = append(out, e)
	}
	return out
}

func (m *Matrix) axis(name string) *Axis {
	for i := range m.Axes {
		if m.Axes[i].Name == name {
			return &m.Axes[i]
		}
	}
	return nil
}
