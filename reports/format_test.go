package reports

import (
	"errors"
	"testing"

	"github.com/kvsweep/kvsweep/internal/fail"
)

// Every format report --format accepts parses to itself; anything else is
// a usage error that names the value and the formats accepted.
func TestParseFormat(t *testing.T) {
	for _, s := range []string{"markdown", "table", "csv", "json", "junit", "html"} {
		f, err := ParseFormat(s)
		if err != nil || string(f) != s {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
	for _, s := range []string{"", "xml", "Markdown", "pdf"} {
		_, err := ParseFormat(s)
		var usage *fail.UsageError
		if !errors.As(err, &usage) {
			t.Fatalf("ParseFormat(%q): %v, not a usage error", s, err)
		}
		if want := `"` + s + `": expected one of markdown, table, csv, json, junit, html`; err.Error() != want {
			t.Errorf("ParseFormat(%q): %q, want %q", s, err, want)
		}
	}
}
