package render

import (
	"fmt"
	"io"
	"strings"
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

// writeProfilePlan prints the profile plan under the plan's cells: "profile:
// torch, cases TC-02, workers decode, from 10s after each case's start
// for 60s (required)".
func writeProfilePlan(w io.Writer, p *sweep.ProfilePlan) error {
	if p == nil {
		return nil
	}
	what := "every case"
	if len(p.Cases) > 0 {
		what = "cases " + strings.Join(p.Cases, ", ")
	} else if p.Tool == "nsys" {
		what = "the workers' whole run"
	}
	who := "every worker"
	if len(p.Workers) > 0 {
		who = "workers " + strings.Join(p.Workers, ", ")
	}
	s := fmt.Sprintf("\nprofile: %s, %s, %s", p.Tool, what, who)
	if p.DelayS > 0 {
		s += fmt.Sprintf(", from %ds after the start", p.DelayS)
	}
	if p.DurationS > 0 {
		s += fmt.Sprintf(", for %ds", p.DurationS)
	}
	if p.Required {
		s += " (required)"
	}
	_, err := fmt.Fprintln(w, s)
	return err
}
