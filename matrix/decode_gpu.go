package matrix

import (
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

// DefaultGPUInterval is how often the jobs sample the GPUs when the spec
// has telemetry and says nothing of gpu.
const DefaultGPUInterval = 2 * time.Second

// gpu reads telemetry.gpu: off (or false), on (or true: every
// DefaultGPUInterval), or {interval: DURATION} from 100ms to 10m.
func (d *decoder) gpu(n ast.Node, where string) time.Duration {
	switch d.Resolve(n).(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		iv := DefaultGPUInterval
		d.Fields(n, where, yamlpos.F("interval", func(n ast.Node, w string) {
			v, _ := d.Scalar(n, w)
			var err error
			iv, err = time.ParseDuration(v.S)
			if err != nil || iv < 100*time.Millisecond || iv > 10*time.Minute {
				d.ErrAt(v, "%s: %q is not a sampling interval (expected a duration from 100ms to 10m, like 2s)", w, v.S)
			}
		}))
		return iv
	}
	v, ok := d.Scalar(n, where)
	switch {
	case !ok:
		return 0
	case v.S == "off" || v.S == "false":
		return 0
	case v.S == "on" || v.S == "true":
		return DefaultGPUInterval
	}
	d.ErrAt(v, "%s: %q is not a GPU sampling setting (expected off, on, or {interval: 2s})", where, v.S)
	return 0
}
