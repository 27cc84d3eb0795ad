package rules

import (
	"strings"
	"testing"
)

func TestOperators(t *testing.T) {
	for _, tc := range []struct {
		rule string
		v    float64
		want bool
	}{
		{"tokens_generated > 0", 0, false},
		{"tokens_generated > 0", 1, true},
		{"guard_hits >= 5", 5, true},
		{"guard_hits >= 5", 4, false},
		{"first_correct_response_s < 5", 5, false},
		{"first_correct_response_s < 5", 4.9, true},
		{"ttft_ms <= 250.5", 250.5, true},
		{"ttft_ms <= 250.5", 250.6, false},
		{"errors == 0", 0, true},
		{"errors == 0", 1, false},
		{"replacements != 0", 0, false},
		{"replacements != -1.5e2", 0, true},
		{"  a.b_c>=-1  ", -1, true},
	} {
		r, err := Parse(tc.rule)
		if err != nil {
			t.Fatalf("%q: %v", tc.rule, err)
		}
		if got := r.Holds(tc.v); got != tc.want {
			t.Errorf("%q with %v: %v, want %v", tc.rule, tc.v, got, tc.want)
		}
	}
}

func TestRefused(t *testing.T) {
	for rule, want := range map[string]string{
		"tokens_generated":     "has no comparison",
		"tokens generated > 0": "is not a metric name",
		"> 5":                  "is not a metric name",
		"x > five":             `"five" is not a number`,
		"x > 1e999":            "is not a number",
		"x > NaN":              "is not a number",
		"x > 0x10":             "is not a number",
		"x > ":                 "is not a number",
		"x =< 3":               "is not a metric name",
		"x > 1 && y < 2":       "is not a number",
		"$(reboot) > 1":        "is not a metric name",
	} {
		_, err := Parse(rule)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", rule, err, want)
		}
	}
}

func TestCheck(t *testing.T) {
	rs, err := ParseAll([]string{"tokens_generated > 0", "guard_hits >= 5"})
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]float64{"tokens_generated": 12, "guard_hits": 3}
	get := func(n string) (float64, bool) { v, ok := metrics[n]; return v, ok }
	if got := Check(rs, get); got != "rule guard_hits >= 5 broken: guard_hits is 3" {
		t.Errorf("got %q", got)
	}
	delete(metrics, "tokens_generated")
	if got := Check(rs, get); got != "rule tokens_generated > 0: the case reported no tokens_generated" {
		t.Errorf("got %q", got)
	}
	metrics["tokens_generated"], metrics["guard_hits"] = 1, 5
	if got := Check(rs, get); got != "" {
		t.Errorf("got %q", got)
	}
}
