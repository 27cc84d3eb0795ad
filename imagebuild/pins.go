// Package imagebuild builds the KVCR quick-start image with BuildKit from a
// pinned set of source revisions, and records what was built.
//
// A pins file names one compatibility set: the engine the image serves
// (vllm, the default, or sglang), the base image by digest, the Dynamo and
// (for vLLM) vLLM-adapter repositories at a ref each, KVCR (a local
// checkout or a repository at a ref), build arguments and the Dockerfile.
// The engine chooses the embedded Dockerfile: vLLM's image with the
// adapter overlaid (templates/Dockerfile.quick-start-vllm), or SGLang's
// with no adapter (templates/Dockerfile.quick-start-sglang: SGLang loads
// KVCR as a HiCache storage backend), so an SGLang pins file has no
// vllm_adapter, and its image records none.
// Resolve turns every ref into a full commit and fails closed: a
// placeholder, an unknown ref, a branch (unless allowed), a base image
// without digest or whose tag no longer points at it, or a dirty checkout
// (unless allowed) is refused. Build runs the Dockerfile through BuildKit
// with the resolved revisions as build arguments and, from the same data,
// source-revisions.json as a named context, so the record in the image
// (/opt/kvcr-build/source-revisions.json) cannot disagree with what was
// built. Inspect and Verify read that record back from an image.
package imagebuild

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
	"github.com/kvsweep/kvsweep/provenance"
)

// Component names, in build order.
const (
	Dynamo      = provenance.Dynamo
	VLLMAdapter = provenance.VLLMAdapter
	KVCR        = provenance.KVCR
)

// The engines a pins file may name (its engine key), each with its own
// embedded quick-start Dockerfile.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
)

// Engines are the values of a pins file's engine key; the first is the
// default.
var Engines = []string{EngineVLLM, EngineSGLang}

// Pins is a decoded pins file.
type Pins struct {
	File string
	// Engine is the engine the image serves, one of Engines (EngineVLLM
	// when the file names none): it chooses the embedded Dockerfile and
	// whether vllm_adapter is required (vllm) or refused (sglang).
	Engine     string
	Base       string // repo[:tag]@sha256:...
	basePos    yamlpos.Pos
	dfPos      yamlpos.Pos
	Components []Source
	BuildArgs  map[string]string
	ArgKeys    []string
	argLines   map[string]int // the line of each build argument's key
	// PlatformArgs are the build arguments given one value per platform
	// (a download's SHA-256): name -> platform -> value; their names are
	// in ArgKeys too, not in BuildArgs.
	PlatformArgs map[string]map[string]string
	// Platforms the image is built for (platforms key; DefaultPlatforms
	// when the file names none).
	Platforms    []string
	platformsPos yamlpos.Pos
	Dockerfile   string // path; empty for the embedded quick-start Dockerfile
	// PythonLock is the lock file (absolute) of every Python input, by
	// version and hash, that the Dockerfile installs with
	// --require-hashes; "" when the pins name none.
	PythonLock string
	lockPos    yamlpos.Pos
}

// Source is where one component comes from: a repository at a ref, or
// (KVCR only) a local checkout.
type Source struct {
	Name string
	Repo string
	Ref  string
	Path string // local checkout, absolute
	pos  yamlpos.Pos
}

var (
	digestRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
	commitRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })
	argRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	refRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/+-]{0,254}$`) })
	// scpRE is git's scp-like syntax, user@host:path.
	scpRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:[A-Za-z0-9_~./-]+$`)
	})
)

// RepoSchemes are the URL schemes a pinned repository may use; git's other
// transports (ext::, fd::) run commands and are never accepted.
var RepoSchemes = []string{"https", "http", "git", "ssh", "file"}

// checkRepo accepts a repository URL of one of RepoSchemes, or git's
// scp-like user@host:path, and nothing that git could read as an option.
func checkRepo(repo string) error {
	const want = "(expected https://, http://, git://, ssh:// or file:// URL, or user@host:path)"
	if scpRE().MatchString(repo) {
		return nil
	}
	u, err := url.Parse(repo)
	if err != nil || strings.HasPrefix(repo, "-") || strings.ContainsAny(repo, " \t\r\n\x00") {
		return fmt.Errorf("%q is not a repository URL %s", repo, want)
	}
	if !slices.Contains(RepoSchemes, u.Scheme) || (u.Scheme != "file" && u.Host == "") || (u.Scheme == "file" && u.Path == "") {
		return fmt.Errorf("%q is not a repository URL %s", repo, want)
	}
	return nil
}

// LoadPins reads and checks a pins file. Relative paths in it are relative
// to the file.
func LoadPins(path string) (*Pins, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePins(path, src)
}

// ParsePins decodes a pins file; file names it in messages and anchors
// relative paths.
func ParsePins(file string, src []byte) (*Pins, error) {
	root, d, err := yamlpos.Parse(file, src, "a mapping with base, dynamo, vllm_adapter and kvcr")
	if err != nil {
		return nil, err
	}
	dir, _ := filepath.Abs(filepath.Dir(file))
	p := &Pins{File: file, Engine: EngineVLLM, BuildArgs: map[string]string{}, Platforms: DefaultPlatforms}
	seen := map[string]bool{}
	engineKnown := true // false once the engine is refused: what it requires is unknown
	comp := func(name string) yamlpos.Field {
		return yamlpos.F(name, func(n ast.Node, w string) {
			seen[name] = true
			p.Components = append(p.Components, component(d, n, w, name, dir))
		})
	}
	d.Fields(root, "",
		yamlpos.F("version", func(n ast.Node, w string) {
			if v := d.Integer(n, w); v != 1 && len(d.Errs) == 0 {
				d.Errorf(n, "%s: unsupported version %d (expected 1)", w, v)
			}
		}),
		yamlpos.F("engine", func(n ast.Node, w string) { engineKnown = p.engine(d, n, w) }),
		yamlpos.F("platforms", func(n ast.Node, w string) { p.platforms(d, n, w) }),
		yamlpos.F("base", func(n ast.Node, w string) {
			v, _ := d.Scalar(n, w)
			seen["base"] = true
			p.Base, p.basePos = v.S, v.Pos
			if err := checkBase(v.S); err != nil {
				d.ErrAt(v, "%s: %v", w, err)
			}
		}),
		comp(Dynamo), comp(VLLMAdapter), comp(KVCR),
		yamlpos.F("build_args", func(n ast.Node, w string) { p.buildArgs(d, n, w) }),
		yamlpos.F("python_lock", func(n ast.Node, w string) {
			p.PythonLock, p.lockPos = d.Str(n, w), yamlpos.PosOf(n)
			if p.PythonLock != "" && !filepath.IsAbs(p.PythonLock) {
				p.PythonLock = filepath.Join(dir, p.PythonLock)
			}
		}),
		yamlpos.F("dockerfile", func(n ast.Node, w string) {
			p.Dockerfile, p.dfPos = d.Str(n, w), yamlpos.PosOf(n)
			if p.Dockerfile != "" && !filepath.IsAbs(p.Dockerfile) {
				p.Dockerfile = filepath.Join(dir, p.Dockerfile)
			}
		}),
	)
	p.requireKeys(d, root, seen, engineKnown)
	p.checkPlatformArgs(d)
	if len(d.Errs) > 0 {
		return nil, d.Errs
	}
	return p, nil
}

// engine decodes the engine key; false when it was refused.
func (p *Pins) engine(d *yamlpos.Decoder, n ast.Node, w string) bool {
	v, ok := d.Scalar(n, w)
	if !ok {
		return false
	}
	if !slices.Contains(Engines, v.S) {
		d.ErrAt(v, "%s: %q is not an engine kvsweep builds an image for (expected %s)", w, v.S, strings.Join(Engines, " or "))
		return false
	}
	p.Engine = v.S
	return true
}

// buildArgs decodes build_args with the line of each key.
func (p *Pins) buildArgs(d *yamlpos.Decoder, n ast.Node, w string) {
	p.BuildArgs, p.PlatformArgs, p.argLines = map[string]string{}, map[string]map[string]string{}, map[string]int{}
	for _, kv := range d.Mapping(n, w) {
		p.argLines[kv.Key] = yamlpos.PosOf(kv.KeyN).Line
		p.ArgKeys = append(p.ArgKeys, kv.Key)
		if isMapping(d.Resolve(kv.Value)) {
			p.PlatformArgs[kv.Key], _ = d.StrMap(kv.Value, yamlpos.Join(w, kv.Key))
		} else if v, ok := d.Scalar(kv.Value, yamlpos.Join(w, kv.Key)); ok {
			p.BuildArgs[kv.Key] = v.S
		}
	}
	slices.Sort(p.ArgKeys)
	for _, k := range p.ArgKeys {
		if !argRE().MatchString(k) {
			d.Errorf(n, "%s: %q is not a build argument name", w, k)
		}
		if reserved[k] {
			d.Errorf(n, "%s: %s is set by kvsweep from the pins; it cannot be given here", w, k)
		}
	}
}

// requireKeys refuses a pins file without the keys its engine needs: the
// vLLM image needs vllm_adapter; the SGLang image has no adapter (KVCR is
// its HiCache storage backend, installed with KVCR itself), so one given
// is refused where it stands. With the engine refused (engineKnown false),
// the adapter is neither required nor refused.
func (p *Pins) requireKeys(d *yamlpos.Decoder, root ast.Node, seen map[string]bool, engineKnown bool) {
	required := []string{"base", Dynamo, VLLMAdapter, KVCR}
	switch {
	case !engineKnown:
		required = []string{"base", Dynamo, KVCR}
	case p.Engine == EngineSGLang:
		required = []string{"base", Dynamo, KVCR}
		if a := p.Component(VLLMAdapter); a != nil {
			d.ErrAt(yamlpos.Value{Pos: a.pos}, "%s: the sglang engine's image has no vLLM adapter (SGLang loads KVCR as a HiCache storage backend, installed with kvcr): remove %s, or set engine: vllm", VLLMAdapter, VLLMAdapter)
		}
	}
	for _, req := range required {
		if !seen[req] {
			d.Errorf(root, "missing required key %q", req)
		}
	}
}

// component decodes one component's pin: repo and ref, or (kvcr only)
// the path of a local checkout, relative to the pins file's directory dir.
func component(d *yamlpos.Decoder, n ast.Node, w, name, dir string) Source {
	s := Source{Name: name, pos: yamlpos.PosOf(n)}
	d.Fields(n, w,
		yamlpos.F("repo", func(n ast.Node, w string) {
			v, _ := d.Scalar(n, w)
			s.Repo = v.S
			if err := checkRepo(v.S); err != nil {
				d.ErrAt(v, "%s: %v", w, err)
			}
		}),
		yamlpos.F("ref", func(n ast.Node, w string) {
			v, _ := d.Scalar(n, w)
			s.Ref = v.S
			switch {
			case placeholder(v.S):
				d.ErrAt(v, "%s: %q is a placeholder, not a revision (pin a tag or a 40-hex commit)", w, v.S)
			case !refRE().MatchString(v.S) || strings.Contains(v.S, ".."):
				d.ErrAt(v, "%s: %q is not a git ref (expected a tag, a branch or a 40-hex commit: letters, digits, '.', '_', '/', '+' and '-', not starting with '-')", w, v.S)
			}
		}),
		yamlpos.F("path", func(n ast.Node, w string) {
			v, _ := d.Scalar(n, w)
			if name != KVCR {
				d.ErrAt(v, "%s: only kvcr can come from a local checkout; %s needs repo and ref", w, name)
			}
			s.Path = v.S
			if !filepath.IsAbs(s.Path) {
				s.Path = filepath.Join(dir, s.Path)
			}
		}),
	)
	switch {
	case s.Path != "" && (s.Repo != "" || s.Ref != ""):
		d.Errorf(n, "%s: give either path (a local checkout) or repo and ref, not both", w)
	case s.Path == "" && (s.Repo == "" || s.Ref == ""):
		d.Errorf(n, "%s: repo and ref are required", w)
	}
	return s
}

// reserved build arguments come from the resolved pins.
var reserved = map[string]bool{
	"BASE_IMAGE": true, "DYNAMO_REPO": true, "DYNAMO_COMMIT": true, "VLLM_ADAPTER_REPO": true,
	"VLLM_ADAPTER_COMMIT": true, "KVCR_COMMIT": true, "SOURCE_DATE_EPOCH": true,
}

// placeholder reports refs that stand for "fill this in".
func placeholder(ref string) bool {
	r := strings.ToUpper(strings.TrimSpace(ref))
	return r == "" || strings.ContainsAny(r, "<>{}") || strings.Contains(r, "TODO") || strings.Contains(r, "PLACEHOLDER") ||
		strings.Contains(r, "REPLACE") || strings.Contains(r, "XXXX") || strings.Contains(r, "CHANGEME") ||
		strings.Trim(r, "0") == ""
}

// checkBase requires repo[:tag]@sha256:<64 hex>.
func checkBase(ref string) error {
	name, digest, ok := strings.Cut(ref, "@")
	switch {
	case !ok:
		return fmt.Errorf("%q has no digest (expected NAME:TAG@sha256:..., so the build cannot change under you)", ref)
	case name == "":
		return fmt.Errorf("%q has no image name", ref)
	case placeholder(strings.TrimPrefix(digest, "sha256:")):
		// Before the form: sha256:REPLACE-WITH-... is a digest to fill
		// in, not a malformed one.
		return fmt.Errorf("%q: the digest is a placeholder: pin the image's digest (docker buildx imagetools inspect %s)", ref, name)
	case !digestRE().MatchString(digest):
		return fmt.Errorf("%q: digest %q is not sha256: and 64 hex digits", ref, digest)
	}
	return nil
}

// Component returns the source of a component, or nil.
func (p *Pins) Component(name string) *Source {
	for i := range p.Components {
		if p.Components[i].Name == name {
			return &p.Components[i]
		}
	}
	return nil
}
