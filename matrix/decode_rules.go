package matrix

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
	"github.com/kvsweep/kvsweep/rules"
)

// cases reads the cases mapping: case id -> {require: [RULE, ...],
// cache: STATE, prime: [COMMAND...], min_reuse: FRACTION}.
func (d *decoder) cases(n ast.Node, where string, s *Spec) {
	for _, e := range d.Mapping(n, where) {
		w := yamlpos.Join(where, e.Key)
		c := &Case{ID: e.Key, Pos: yamlpos.PosOf(e.KeyN)}
		cacheFields, checkCache := d.caseCache(c, w)
		d.Fields(e.Value, w, append([]yamlpos.Field{yamlpos.F("require", func(n ast.Node, w string) { c.Require = d.rules(n, w) })}, cacheFields...)...)
		checkCache()
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
