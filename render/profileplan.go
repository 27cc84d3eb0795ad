package render

import (
	"time"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
)

// ProfilePlan is the manifest's profile plan from the spec's profile
// section; nil when it has none.
func ProfilePlan(spec *matrix.Spec) *sweep.ProfilePlan {
	p := spec.Profile
	if p == nil {
		return nil
	}
	return &sweep.ProfilePlan{Tool: p.Tool, Cases: p.Cases, Workers: p.Workers,
		DelayS: int(p.Delay / time.Second), DurationS: int(p.Duration / time.Second), Required: p.Required}
}
