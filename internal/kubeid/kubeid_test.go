package kubeid

import (
	"regexp"
	"strings"
	"testing"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// A label value names its source alone: kept when it is one already,
// otherwise sanitized, cut and told apart by a hash.
func TestLabelValue(t *testing.T) {
	long := strings.Repeat("a", 80)
	for in, prefix := range map[string]string{
		"quickstart-1a2b3c": "quickstart-1a2b3c",
		"aggregated.1":      "aggregated-1-",
		"aggregated-1":      "aggregated-1",
		"Sweep_ID.x":        "sweep-id-x-",
		long:                strings.Repeat("a", 54) + "-",
	} {
		got := LabelValue(in)
		if !strings.HasPrefix(got, prefix) || !dnsLabel.MatchString(got) {
			t.Errorf("LabelValue(%q) = %q, want a DNS label starting %q", in, got, prefix)
		}
	}
	if LabelValue("aggregated.1") == LabelValue("aggregated-1") {
		t.Error("two job names share a label value")
	}
	if LabelValue(long) == LabelValue(long+"b") {
		t.Error("two long names share a label value")
	}
}
