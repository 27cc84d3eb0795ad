package matrix

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The profile section as the jobs get it, and each wrong value refused
// at its place with what was expected.
func TestProfile(t *testing.T) {
	s, cells, err := ParseCells("sweep.yaml", []byte(edit(t, "name: mini", "name: mini\nprofile: {tool: torch, cases: [TC-01], workers: [\"0\", prefill-1], delay: 5s, duration: 2m, required: true}")))
	if err != nil {
		t.Fatal(err)
	}
	p := s.Profile
	if p.Tool != ProfileTorch || !slices.Equal(p.Cases, []string{"TC-01"}) || !slices.Equal(p.Workers, []string{"0", "prefill-1"}) ||
		p.Delay != 5*time.Second || p.Duration != 2*time.Minute || !p.Required || len(cells) == 0 {
		t.Errorf("profile %+v", p)
	}
	if s, err := Parse("sweep.yaml", []byte(edit(t, "name: mini", "name: mini\nprofile: {tool: nsys}"))); err != nil || s.Profile.Tool != ProfileNsys || s.Profile.Required {
		t.Errorf("nsys alone: %+v %v", s.Profile, err)
	}
	for _, c := range []struct{ profile, want string }{
		{"profile: {tool: perf}", `sweep.yaml:3:17: profile.tool: unknown value "perf" (expected one of: nsys, torch)`},
		{"profile: {cases: [TC-01]}", `sweep.yaml:3:10: profile: missing required key "tool" (expected one of: nsys, torch)`},
		{"profile: {tool: nsys, delay: 1.5s}", `sweep.yaml:3:30: profile.delay: "1.5s" is not a profile window (expected whole seconds from 0s to 24h, like 30s or 2m)`},
		{"profile: {tool: nsys, duration: 0s}", `sweep.yaml:3:33: profile.duration: "0s" is not a profile window (expected whole seconds from 1s to 24h, like 30s or 2m)`},
		{"profile: {tool: nsys, duration: 48h}", `profile.duration: "48h" is not a profile window`},
		{"profile: {tool: nsys, workers: [\"../x\"]}", `sweep.yaml:3:33: profile.workers[0]: "../x" is not a worker name`},
		{"profile: {tool: nsys, every: 1s}", `sweep.yaml:3:23: profile: unknown key "every" (expected one of: tool, cases, workers, delay, duration, required)`},
		{"profile: {tool: torch, required: maybe}", `profile.required`},
	} {
		_, err := Parse("sweep.yaml", []byte(edit(t, "name: mini", "name: mini\n"+c.profile)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.profile, err, c.want)
		}
	}
	_, _, err = ParseCells("sweep.yaml", []byte(edit(t, "name: mini", "name: mini\nprofile: {tool: torch, cases: [TC-09]}")))
	if want := `sweep.yaml:3:32: profile.cases[0]: no cell plans case "TC-09" (expected one of: TC-01, TC-02)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an unplanned case: %v\nwant %s", err, want)
	}
}
