package bisect

import (
	"fmt"
	"os"
	"regexp"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

// Revisions is a revisions file (kvsweep run/ci --revisions): sets of
// component revisions run side by side in one sweep, one image each. A PR
// stack is one set per pull request's head; a range of one component is
// one set per commit.
type Revisions struct {
	File string
	// Push is the repository the images go to; PullRegistry the
	// registry the jobs pull them from when not Push's.
	Push, PullRegistry string
	MediaTypes         string // oci (default) or docker
	BuildkitAddr       string
	Sets               []Set
	// Range, when set, adds a set per commit of a component.
	Range *Range
}

// Set is one revision set: a name (the cells' revision parameter) and
// the components it moves away from the pins, to a commit, tag or branch.
type Set struct {
	Name string
	Refs map[string]string
	Pos  yamlpos.Pos
}

// Range is the commits from one revision to another of a component, each
// a set named by its short commit.
type Range struct {
	Component, From, To string
	All                 bool
	Pos                 yamlpos.Pos
}

var setNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,39}$`) })

// LoadRevisions reads and checks a revisions file.
func LoadRevisions(path string) (*Revisions, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseRevisions(path, src)
}

// ParseRevisions decodes a revisions file; file names it in messages.
func ParseRevisions(file string, src []byte) (*Revisions, error) {
	root, d, err := yamlpos.Parse(file, src, "a mapping with push and revisions (or range)")
	if err != nil {
		return nil, err
	}
	r := &Revisions{File: file, MediaTypes: "oci"}
	d.Fields(root, "",
		yamlpos.F("version", func(n ast.Node, w string) {
			if v := d.Integer(n, w); v != 1 && len(d.Errs) == 0 {
				d.Errorf(n, "%s: unsupported version %d (expected 1)", w, v)
			}
		}),
		yamlpos.F("push", func(n ast.Node, w string) { r.Push = d.Str(n, w) }),
		yamlpos.F("pull_registry", func(n ast.Node, w string) { r.PullRegistry = d.Str(n, w) }),
		yamlpos.F("buildkit_addr", func(n ast.Node, w string) { r.BuildkitAddr = d.Str(n, w) }),
		yamlpos.F("media_types", func(n ast.Node, w string) {
			if r.MediaTypes = d.Str(n, w); r.MediaTypes != "oci" && r.MediaTypes != "docker" {
				d.Errorf(n, "%s: %q is not oci or docker", w, r.MediaTypes)
			}
		}),
		yamlpos.F("revisions", func(n ast.Node, w string) {
			for i, item := range d.List(n, w) {
				r.Sets = append(r.Sets, decodeSet(d, item, fmt.Sprintf("%s[%d]", w, i)))
			}
		}),
		yamlpos.F("range", func(n ast.Node, w string) { r.Range = decodeRange(d, n, w) }),
	)
	if r.Push == "" {
		d.Errorf(root, "missing required key \"push\" (the repository the images go to, REGISTRY/NAME)")
	}
	if len(r.Sets) == 0 && r.Range == nil {
		d.Errorf(root, "no revisions: give revisions (a list of name and refs) or range (component, from, to)")
	}
	seen := map[string]bool{}
	for _, s := range r.Sets {
		if seen[s.Name] {
			d.ErrAt(yamlpos.Value{S: s.Name, Pos: s.Pos}, "revisions: %q is named twice", s.Name)
		}
		seen[s.Name] = true
	}
	if len(d.Errs) > 0 {
		return nil, d.Errs
	}
	return r, nil
}

func decodeSet(d *yamlpos.Decoder, n ast.Node, w string) Set {
	s := Set{Pos: yamlpos.PosOf(n)}
	d.Fields(n, w,
		yamlpos.F("name", func(n ast.Node, w string) {
			v, _ := d.Scalar(n, w)
			s.Name = v.S
			if !setNameRE().MatchString(s.Name) {
				d.ErrAt(v, "%s: %q is not a revision name (lower-case letters, digits, '.', '_' and '-', at most 40, as a cell parameter and a job name take it)", w, s.Name)
			}
		}),
		yamlpos.F("refs", func(n ast.Node, w string) { s.Refs, _ = d.StrMap(n, w) }),
	)
	if s.Name == "" {
		d.Errorf(n, "%s: missing required key \"name\"", w)
	}
	return s
}

func decodeRange(d *yamlpos.Decoder, n ast.Node, w string) *Range {
	rg := &Range{Pos: yamlpos.PosOf(n)}
	d.Fields(n, w,
		yamlpos.F("component", func(n ast.Node, w string) { rg.Component = d.Str(n, w) }),
		yamlpos.F("from", func(n ast.Node, w string) { rg.From = d.Str(n, w) }),
		yamlpos.F("to", func(n ast.Node, w string) { rg.To = d.Str(n, w) }),
		yamlpos.F("all", func(n ast.Node, w string) { rg.All = d.Bool(n, w) }),
	)
	if rg.Component == "" || rg.From == "" || rg.To == "" {
		d.Errorf(n, "%s: component, from and to are required", w)
	}
	return rg
}

// Where is "FILE:LINE:COL" of a place in the file, for messages about a
// set that only later turns out wrong (a component not in the pins).
func (r *Revisions) Where(p yamlpos.Pos) string {
	return fmt.Sprintf("%s:%d:%d", r.File, p.Line, p.Col)
}
