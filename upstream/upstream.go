// Package upstream holds what the pinned releases of vLLM, Dynamo and
// SGLang (and their images) accept and expose, as data read from their
// source: flags, environment variables, services, entrypoints, connectors,
// model architectures, metric names and build tools. Every fact cites the
// repository, path, commit and line it was read at (facts/*.yaml, one file
// per release). kvsweep's conformance test checks everything it renders
// for an engine against the facts of the release the pins name, and the
// e2e stand-ins are built from them, so kvsweep agrees with upstream, not
// with its own assumptions.
//
// Moving the pins to another release starts here: read that release's
// facts from its source into facts/PROJECT-RELEASE.yaml (docs/image.md,
// "Moving the pins"), then change the pins; the conformance test refuses
// pins whose releases have no facts.
package upstream

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

//go:embed facts/*.yaml
var factsFS embed.FS

// Source is where a fact was read: a repository, a path in it, the commit
// of the version read, and the line that states the fact.
type Source struct {
	Repo   string `yaml:"repo"`
	Path   string `yaml:"path"`
	Commit string `yaml:"commit"`
	Line   int    `yaml:"line"`
}

// Fact is one thing a release accepts or exposes: Key says what kind of
// thing (serve.flag, env, image.entrypoint, ...), Values what it is.
type Fact struct {
	Key    string
	Values []string
	Source Source
	Note   string
}

// Value is the fact's first value ("" for an empty list).
func (f Fact) Value() string {
	if len(f.Values) == 0 {
		return ""
	}
	return f.Values[0]
}

// Release is the facts of one release of one project.
type Release struct {
	File       string // facts/NAME.yaml
	Project    string
	Release    string
	Repo       string
	Commit     string
	CommitNote string
	Facts      []Fact
}

// Cite names a fact's source: REPO PATH@COMMIT:LINE.
func (r *Release) Cite(f Fact) string {
	repo := f.Source.Repo
	if repo == "" {
		repo = r.Repo
	}
	c := f.Source.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	return fmt.Sprintf("%s %s@%s:%d (%s %s, %s)", repo, f.Source.Path, c, f.Source.Line, r.Project, r.Release, r.File)
}

// All are the facts of a key, in file order.
func (r *Release) All(key string) []Fact {
	var out []Fact
	for _, f := range r.Facts {
		if f.Key == key {
			out = append(out, f)
		}
	}
	return out
}

// Values are the first values of every fact of a key.
func (r *Release) Values(key string) []string {
	var out []string
	for _, f := range r.All(key) {
		out = append(out, f.Value())
	}
	return out
}

// Find is the fact of key whose first value is v.
func (r *Release) Find(key, v string) (Fact, bool) {
	for _, f := range r.Facts {
		if f.Key == key && f.Value() == v {
			return f, true
		}
	}
	return Fact{}, false
}

// One is the only (or first) fact of a key.
func (r *Release) One(key string) (Fact, bool) {
	all := r.All(key)
	if len(all) == 0 {
		return Fact{}, false
	}
	return all[0], true
}

// file is a facts file as written.
type file struct {
	Project    string `yaml:"project"`
	Release    string `yaml:"release"`
	Repo       string `yaml:"repo"`
	Commit     string `yaml:"commit"`
	CommitNote string `yaml:"commit_note"`
	Facts      []struct {
		Key    string `yaml:"key"`
		Value  any    `yaml:"value"`
		Source Source `yaml:"source"`
		Note   string `yaml:"note"`
	} `yaml:"facts"`
}

var (
	commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)
	loadOnce sync.Once
	loaded   []*Release
	loadErr  error
)

// Load reads every embedded facts file, checking that each fact names
// its source whole.
func Load() ([]*Release, error) {
	loadOnce.Do(func() { loaded, loadErr = load(factsFS) })
	return loaded, loadErr
}

func load(fsys fs.FS) ([]*Release, error) {
	names, err := fs.Glob(fsys, "facts/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*Release
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		r, err := Parse(name, b)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Parse reads one facts file.
func Parse(name string, b []byte) (*Release, error) {
	var f file
	if err := yaml.UnmarshalWithOptions(b, &f, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("upstream: %s: %s", name, yaml.FormatError(err, false, true))
	}
	if f.Project == "" || f.Release == "" || f.Repo == "" {
		return nil, fmt.Errorf("upstream: %s: project, release and repo are required", name)
	}
	r := &Release{File: name, Project: f.Project, Release: f.Release, Repo: f.Repo, Commit: f.Commit, CommitNote: f.CommitNote}
	for i, ff := range f.Facts {
		where := fmt.Sprintf("upstream: %s: facts[%d] (%s)", name, i, ff.Key)
		if ff.Key == "" {
			return nil, fmt.Errorf("%s: no key", where)
		}
		s := ff.Source
		if s.Path == "" || !commitRE.MatchString(s.Commit) || s.Line < 1 {
			return nil, fmt.Errorf("%s: the source must name a path, a 40-hex commit and a line, got %+v", where, s)
		}
		var vals []string
		switch v := ff.Value.(type) {
		case string:
			vals = []string{v}
		case []any:
			for _, e := range v {
				vals = append(vals, fmt.Sprint(e))
			}
		case nil:
			return nil, fmt.Errorf("%s: no value", where)
		default:
			vals = []string{fmt.Sprint(v)}
		}
		r.Facts = append(r.Facts, Fact{Key: ff.Key, Values: vals, Source: s, Note: ff.Note})
	}
	return r, nil
}

// For is the facts of a project's release ("v0.20.1" or "0.20.1").
func For(project, release string) (*Release, error) {
	all, err := Load()
	if err != nil {
		return nil, err
	}
	want := "v" + strings.TrimPrefix(release, "v")
	var have []string
	for _, r := range all {
		if r.Project != project {
			continue
		}
		if r.Release == want || r.Release == release {
			return r, nil
		}
		have = append(have, r.Release)
	}
	slices.Sort(have)
	return nil, fmt.Errorf("upstream: no facts for %s %s (facts are kept for: %s): read that release's facts from its source into upstream/facts/%s-%s.yaml first (docs/image.md, \"Moving the pins\")",
		project, want, strings.Join(append(have, "nothing else")[:max(len(have), 1)], ", "), project, want)
}

// FileName is the facts file of a release, as For names it.
func FileName(project, release string) string {
	return path.Join("facts", project+"-v"+strings.TrimPrefix(release, "v")+".yaml")
}
