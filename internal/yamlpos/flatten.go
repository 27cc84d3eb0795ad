package yamlpos

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
)

// MaxFlatKeys bounds Flatten's output.
const MaxFlatKeys = 10000

// Flatten reads a YAML document (with Parse's limits) into one entry per
// scalar, keyed by its path: "topologies.aggregated.resources.time",
// "matrix.engine[1]". It is how two specs are compared key by key.
func Flatten(file string, src []byte) (map[string]string, error) {
	root, d, err := Parse(file, src, "a YAML document")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(n ast.Node, path string, depth int)
	walk = func(n ast.Node, path string, depth int) {
		if len(out) >= MaxFlatKeys || depth > MaxDepth {
			return
		}
		switch t := d.Resolve(n).(type) {
		case *ast.MappingNode:
			for _, kv := range t.Values {
				walk(kv.Value, Join(path, kv.Key.String()), depth+1)
			}
		case *ast.MappingValueNode:
			walk(t.Value, Join(path, t.Key.String()), depth+1)
		case *ast.SequenceNode:
			for i, v := range t.Values {
				walk(v, fmt.Sprintf("%s[%d]", path, i), depth+1)
			}
		case nil, *ast.NullNode:
			out[path] = ""
		default:
			if v, ok := d.Scalar(t, path); ok {
				out[path] = v.S
			}
		}
	}
	walk(root, "", 0)
	return out, nil
}
