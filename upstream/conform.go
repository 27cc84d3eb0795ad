package upstream

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Violation is something kvsweep renders that the pinned release does not
// accept: what, where, and the fact (or the facts file) that says so.
type Violation struct {
	Where string // the file (or file and job) it was found in
	What  string
	Fact  string // the fact's source (Release.Cite), or the facts file that lacks it
}

func (v Violation) String() string { return v.Where + ": " + v.What + " [" + v.Fact + "]" }

// Checker holds the releases the pins name.
type Checker struct {
	VLLM, Dynamo, SGLang *Release
}

func (c *Checker) lacks(r *Release, key, what string) string {
	return fmt.Sprintf("%s %s: no %s fact lists %s", r.File, r.Release, key, what)
}

var (
	envLineRE    = regexp.MustCompile(`\b(DYN_[A-Z0-9_]+|NATS_SERVER|ETCD_ENDPOINTS)=`)
	flagRE       = regexp.MustCompile(`(?:^|\s)(--[a-z][a-z0-9-]*)`)
	appRunRE     = regexp.MustCompile(`apptainer run\b`)
	benchServeRE = regexp.MustCompile(`vllm"?\}? bench serve\b`)
	serveRE      = regexp.MustCompile(`vllm"?\}? serve\b`)
	datasetRE    = regexp.MustCompile(`--dataset-name[ =]"?([a-z_-]+)`)
)

// Dockerfile checks a quick-start Dockerfile against the base image and
// Dynamo: the base's ENTRYPOINT reset, only the Dynamo variables the
// release reads, protoc where Dynamo's build needs it, NATS where its
// workers need it.
func (c *Checker) Dockerfile(where, text string) []Violation {
	var out []Violation
	lines := logicalLines(text)
	if c.VLLM != nil {
		if f, ok := c.VLLM.One("image.entrypoint"); ok && len(f.Values) > 0 {
			if !finalStageHas(lines, "ENTRYPOINT []") {
				out = append(out, Violation{where, fmt.Sprintf("the final stage does not reset the base image's ENTRYPOINT %q (ENTRYPOINT [] and a neutral CMD, so every runtime runs the command given)", f.Values), c.VLLM.Cite(f)})
			}
		}
	}
	if c.VLLM != nil {
		if f, ok := c.VLLM.One("kv_connector.factory_api"); ok && !strings.Contains(text, f.Value()) {
			out = append(out, Violation{where, "the canary does not resolve the KVCR connector through vLLM's own factory (" + f.Value() + "): an image whose vLLM cannot resolve it would pass", c.VLLM.Cite(f)})
		}
	}
	if c.Dynamo != nil {
		read := c.Dynamo.Values("env")
		for _, l := range lines {
			if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(l)), "ENV ") {
				continue
			}
			for _, m := range envLineRE.FindAllStringSubmatch(l, -1) {
				if !slices.Contains(read, m[1]) {
					out = append(out, Violation{where, fmt.Sprintf("ENV %s: Dynamo %s reads no such variable (it reads %s)", m[1], c.Dynamo.Release, strings.Join(read, ", ")), c.lacks(c.Dynamo, "env", m[1])})
				}
			}
		}
		if f, ok := c.Dynamo.One("build.protoc"); ok && !strings.Contains(text, "PROTOC_SHA256") {
			out = append(out, Violation{where, "Dynamo's build runs protoc (a build script compiles protos); the Dockerfile installs no protoc checked by PROTOC_SHA256", c.Dynamo.Cite(f)})
		}
		if f, ok := c.Dynamo.Find("service.required", "nats"); ok && !strings.Contains(text, "nats-server") {
			out = append(out, Violation{where, "Dynamo's workers need NATS with the release's defaults; the image has no nats-server", c.Dynamo.Cite(f)})
		}
	}
	return out
}

// logicalLines joins a Dockerfile's continued lines.
func logicalLines(text string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSuffix(t, "\\") + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// finalStageHas reports whether the last FROM's stage has the instruction.
func finalStageHas(lines []string, instr string) bool {
	last := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.ToUpper(l), "FROM ") {
			last = i
		}
	}
	for _, l := range lines[max(last, 0):] {
		if strings.Join(strings.Fields(l), " ") == instr {
			return true
		}
	}
	return false
}

// Launch checks a rendered job script of a runtime: where the image has
// an ENTRYPOINT, each launch must run the command given instead.
func (c *Checker) Launch(where, runtime, script string) []Violation {
	if c.VLLM == nil {
		return nil
	}
	f, ok := c.VLLM.One("image.entrypoint")
	if !ok || len(f.Values) == 0 {
		return nil
	}
	var out []Violation
	bad := func(what string) {
		out = append(out, Violation{where, fmt.Sprintf("runtime %s: %s, so the image's ENTRYPOINT %q runs in front of every command", runtime, what, f.Values), c.VLLM.Cite(f)})
	}
	lines := logicalLines(script)
	for _, l := range lines {
		switch {
		case runtime == "docker" && strings.Contains(l, "docker run ") && !strings.Contains(l, "--entrypoint"):
			bad("docker run without --entrypoint")
		case runtime == "pyxis" && strings.Contains(l, "--container-image=") && !strings.Contains(l, "--no-container-entrypoint"):
			bad("srun --container-image without --no-container-entrypoint")
		case runtime == "enroot" && strings.Contains(l, "enroot start ") && !strings.Contains(l, "--rc "):
			bad("enroot start without --rc (the image's /etc/rc execs the ENTRYPOINT)")
		case runtime == "apptainer" && appRunRE.MatchString(l):
			bad("apptainer run (the runscript)")
		}
	}
	return out
}

// Services checks that a cell running Dynamo starts what the release's
// workers need.
func (c *Checker) Services(where string, services []string) []Violation {
	if c.Dynamo == nil {
		return nil
	}
	var out []Violation
	for _, f := range c.Dynamo.All("service.required") {
		if !slices.Contains(services, f.Value()) {
			out = append(out, Violation{where, fmt.Sprintf("the cells run Dynamo %s, whose workers need %s with its defaults, but services does not list it", c.Dynamo.Release, f.Value()), c.Dynamo.Cite(f)})
		}
	}
	return out
}

// Env checks a variable a spec sets for the engines: one named for vLLM,
// SGLang or Dynamo (VLLM_, SGLANG_, DYN_) must be one that release reads.
func (c *Checker) Env(where, name string) []Violation {
	var r *Release
	switch {
	case strings.HasPrefix(name, "VLLM_"):
		r = c.VLLM
	case strings.HasPrefix(name, "SGLANG_"):
		r = c.SGLang
	case strings.HasPrefix(name, "DYN_"):
		r = c.Dynamo
	}
	if r == nil {
		return nil
	}
	if slices.Contains(r.Values("env"), name) {
		return nil
	}
	return []Violation{{where, fmt.Sprintf("env %s: %s %s reads no such variable", name, r.Project, r.Release), c.lacks(r, "env", name)}}
}

// VLLMScript checks the vllm serve and vllm bench serve command lines of a
// harness script: every flag must be one the pinned vLLM accepts.
func (c *Checker) VLLMScript(where, text string) []Violation {
	if c.VLLM == nil {
		return nil
	}
	var out []Violation
	serve, bench := c.VLLM.Values("serve.flag"), c.VLLM.Values("bench_serve.flag")
	for _, l := range logicalLines(text) {
		var known []string
		var key string
		switch {
		case benchServeRE.MatchString(l):
			known, key = bench, "bench_serve.flag"
		case serveRE.MatchString(l):
			known, key = serve, "serve.flag"
		default:
			continue
		}
		for _, m := range flagRE.FindAllStringSubmatch(l, -1) {
			if !slices.Contains(known, m[1]) {
				out = append(out, Violation{where, fmt.Sprintf("%s: vLLM %s has no flag %s", strings.Fields(l)[0]+" ...", c.VLLM.Release, m[1]), c.lacks(c.VLLM, key, m[1])})
			}
		}
		if m := datasetRE.FindStringSubmatch(l); m != nil && key == "bench_serve.flag" {
			if f, ok := c.VLLM.One("bench_serve.dataset_choices"); ok && !slices.Contains(f.Values, m[1]) {
				out = append(out, Violation{where, fmt.Sprintf("vllm bench serve --dataset-name %s: vLLM %s offers %s", m[1], c.VLLM.Release, strings.Join(f.Values, ", ")), c.VLLM.Cite(f)})
			}
		}
	}
	return out
}

// KVTransferConfig checks a --kv-transfer-config value: its fields, its
// role, and that vLLM can resolve its connector (registered, or through
// kv_connector_module_path).
func (c *Checker) KVTransferConfig(where, value string) []Violation {
	if c.VLLM == nil {
		return nil
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(value), &cfg); err != nil {
		return []Violation{{where, fmt.Sprintf("--kv-transfer-config %q is not JSON: %v", value, err), c.VLLM.File}}
	}
	var out []Violation
	fields := c.VLLM.Values("kv_transfer_config.field")
	for k := range cfg {
		if !slices.Contains(fields, k) {
			out = append(out, Violation{where, fmt.Sprintf("--kv-transfer-config: vLLM %s's KVTransferConfig has no field %q", c.VLLM.Release, k), c.lacks(c.VLLM, "kv_transfer_config.field", k)})
		}
	}
	if f, ok := c.VLLM.One("kv_transfer_config.kv_role_choices"); ok {
		if r, _ := cfg["kv_role"].(string); !slices.Contains(f.Values, r) {
			out = append(out, Violation{where, fmt.Sprintf("--kv-transfer-config: kv_role %q is not one of %s", r, strings.Join(f.Values, ", ")), c.VLLM.Cite(f)})
		}
	}
	name, _ := cfg["kv_connector"].(string)
	mod, _ := cfg["kv_connector_module_path"].(string)
	if mod == "" && !slices.Contains(c.VLLM.Values("kv_connector.registered"), name) {
		f, _ := c.VLLM.One("kv_connector.resolution")
		out = append(out, Violation{where, fmt.Sprintf("--kv-transfer-config: connector %q is not registered in vLLM %s and no kv_connector_module_path names its module: vLLM refuses it (Unsupported connector type)", name, c.VLLM.Release), c.VLLM.Cite(f)})
	}
	return out
}

// SGLangArgs checks the SGLang server flags among harness words: a HiCache
// storage backend must be one the release offers, and a custom one goes
// through "dynamic" with its extra config, under --enable-hierarchical-cache.
func (c *Checker) SGLangArgs(where string, words []string) []Violation {
	if c.SGLang == nil {
		return nil
	}
	var out []Violation
	val := func(flag string) (string, bool) {
		for i, w := range words {
			if w == flag && i+1 < len(words) {
				return words[i+1], true
			}
			if v, ok := strings.CutPrefix(w, flag+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	backend, ok := val("--hicache-storage-backend")
	if !ok {
		return nil
	}
	if f, ok := c.SGLang.One("hicache.storage_backend_choices"); ok && !slices.Contains(f.Values, backend) {
		out = append(out, Violation{where, fmt.Sprintf("--hicache-storage-backend %s: SGLang %s accepts %s (a custom backend is dynamic, with --hicache-storage-backend-extra-config)", backend, c.SGLang.Release, strings.Join(f.Values, ", ")), c.SGLang.Cite(f)})
	}
	if !slices.Contains(words, "--enable-hierarchical-cache") {
		f, _ := c.SGLang.Find("server.flag", "--enable-hierarchical-cache")
		out = append(out, Violation{where, "--hicache-storage-backend without --enable-hierarchical-cache: SGLang builds no storage backend (the flag is ignored)", c.SGLang.Cite(f)})
	}
	if backend == "dynamic" {
		extra, _ := val("--hicache-storage-backend-extra-config")
		var cfg map[string]any
		_ = json.Unmarshal([]byte(extra), &cfg)
		for _, f := range c.SGLang.All("hicache.dynamic") {
			if _, ok := cfg[f.Value()]; !ok {
				out = append(out, Violation{where, fmt.Sprintf("--hicache-storage-backend dynamic: --hicache-storage-backend-extra-config lacks %q", f.Value()), c.SGLang.Cite(f)})
			}
		}
	}
	return out
}

// Model checks that each engine of the pins knows the model's
// architecture: the family (Qwen3.5 of Qwen/Qwen3.5-4B) names it.
func (c *Checker) Model(where, model string, engines ...*Release) []Violation {
	if c.VLLM == nil {
		return nil
	}
	base := model[strings.LastIndex(model, "/")+1:]
	arch := ""
	var fam Fact
	for _, f := range c.VLLM.All("model.family") {
		if len(f.Values) == 2 && strings.HasPrefix(base, f.Values[0]+"-") && len(f.Values[0]) > len(fam.Value()) {
			arch, fam = f.Values[1], f
		}
	}
	if arch == "" {
		return []Violation{{where, fmt.Sprintf("model %s: no model.family fact names its architecture", model), c.lacks(c.VLLM, "model.family", base)}}
	}
	var out []Violation
	for _, r := range engines {
		if r == nil {
			continue
		}
		if _, ok := r.Find("model.architecture", arch); !ok {
			out = append(out, Violation{where, fmt.Sprintf("model %s is a %s (%s); %s %s has no such architecture", model, arch, c.VLLM.Cite(fam), r.Project, r.Release), c.lacks(r, "model.architecture", arch)})
		}
	}
	return out
}
