package testrun

import (
	"strings"
	"testing"
)

// A line of a harness's log reaches a stored detail escaped and bounded.
func TestEscapeLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text é":           "plain text é",
		"a\tb":                   "a b",
		"red \x1b[31mno\x00":     `red \x1b[31mno\x00`,
		"bad \xff utf-8":         `bad \xff utf-8`,
		strings.Repeat("x", 500): strings.Repeat("x", logEndLineMax) + "...",
	} {
		if got := escapeLine(in); got != want {
			t.Errorf("escapeLine(%q) = %q, want %q", in, got, want)
		}
	}
}
