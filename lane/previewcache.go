package lane

import (
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// previewCache holds each PASS of res to its case's declared cache state
// as collect does, by the figures the file itself reports
// (prefix_cache_hit_rate, kv_connector_hit_rate): a cold case's hit rate
// above the bound, a warm or primed case's reuse below its floor. What
// only a sweep holds (the job's start lines, the telemetry of each
// case's window) a preview cannot judge, so a figure the file lacks is
// left to collect.
func previewCache(s *matrix.Spec, res *result.Result) {
	p := render.CachePlan(s)
	if p == nil {
		return
	}
	for i := range res.Cases {
		if decl, ok := p.Cases[res.Cases[i].ID]; ok {
			testrun.JudgeCacheFigures(&res.Cases[i], decl, p.MaxColdHitRate, false)
		}
	}
}
