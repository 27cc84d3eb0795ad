package matrix

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

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
