package render

import (
	"bytes"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

// The plan says what is profiled, with what, over what window.
func TestWriteProfilePlan(t *testing.T) {
	for _, c := range []struct {
		p    *sweep.ProfilePlan
		want string
	}{
		{nil, ""},
		{&sweep.ProfilePlan{Tool: "torch", Cases: []string{"TC-02"}, Workers: []string{"decode"}, DelayS: 10, DurationS: 60, Required: true},
			"\nprofile: torch, cases TC-02, workers decode, from 10s after the start, for 60s (required)\n"},
		{&sweep.ProfilePlan{Tool: "nsys"}, "\nprofile: nsys, the workers' whole run, every worker\n"},
		{&sweep.ProfilePlan{Tool: "torch"}, "\nprofile: torch, every case, every worker\n"},
	} {
		var b bytes.Buffer
		if err := writeProfilePlan(&b, c.p); err != nil || b.String() != c.want {
			t.Errorf("%+v: %q %v, want %q", c.p, b.String(), err, c.want)
		}
	}
}
