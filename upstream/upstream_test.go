package upstream

import (
	"strings"
	"testing"
)

// Every embedded facts file parses, and every fact names its source.
func TestFactsLoad(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	projects := map[string]bool{}
	for _, r := range all {
		projects[r.Project] = true
		if len(r.Facts) == 0 {
			t.Errorf("%s: no facts", r.File)
		}
	}
	for _, p := range []string{"vllm", "dynamo", "sglang", "build-inputs"} {
		if !projects[p] {
			t.Errorf("no facts for %s", p)
		}
	}
	if _, err := For("vllm", "0.9.9"); err == nil || !strings.Contains(err.Error(), "no facts for vllm v0.9.9") {
		t.Errorf("a release without facts: %v", err)
	}
}

// A fact without a whole source is refused, naming it.
func TestFactsRefuseSourceless(t *testing.T) {
	for _, src := range []string{
		"project: p\nrelease: v1\nrepo: o/r\nfacts:\n  - key: env\n    value: X\n    source: {path: a.go, commit: abc, line: 3}\n",
		"project: p\nrelease: v1\nrepo: o/r\nfacts:\n  - key: env\n    value: X\n    source: {commit: 0123456789012345678901234567890123456789, line: 3}\n",
		"project: p\nrelease: v1\nrepo: o/r\nfacts:\n  - key: env\n    source: {path: a.go, commit: 0123456789012345678901234567890123456789, line: 3}\n",
	} {
		if _, err := Parse("facts/p-v1.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "facts/p-v1.yaml: facts[0] (env)") {
			t.Errorf("%q: %v", src, err)
		}
	}
}
