package matrix

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

func (d *decoder) cluster(n ast.Node, where string, c *Cluster) {
	d.Fields(n, where,
		yamlpos.F("partition", func(n ast.Node, w string) { c.Partition = d.sbatchLine(n, w) }),
		yamlpos.F("account", func(n ast.Node, w string) { c.Account = d.sbatchLine(n, w) }),
		yamlpos.F("qos", func(n ast.Node, w string) { c.QOS = d.sbatchLine(n, w) }),
		yamlpos.F("reservation", func(n ast.Node, w string) { c.Reservation = d.sbatchLine(n, w) }),
		yamlpos.F("constraint", func(n ast.Node, w string) { c.Constraint = d.sbatchLine(n, w) }),
		yamlpos.F("platform", func(n ast.Node, w string) { c.Platform = d.oneOf(n, w, Platforms) }),
		yamlpos.F("emulate", func(n ast.Node, w string) { c.Emulate = d.Bool(n, w) }),
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
