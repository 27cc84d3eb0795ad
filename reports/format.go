package reports

import (
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/internal/fail"
)

// Format is a report format, a value of report --format. The command
// line parses the user's word once (ParseFormat) and the writers take
// the Format; a writer refuses one its report has no form in.
type Format string

// The report formats.
const (
	Markdown Format = "markdown" // fitted to a GitHub step summary
	Table    Format = "table"    // plain text tables
	CSV      Format = "csv"
	JSON     Format = "json"
	JUnit    Format = "junit" // JUnit XML, for CI test views
	HTML     Format = "html"  // a self-contained page
)

// Formats are the report formats, in the order the help and refusals list
// them.
var Formats = []Format{Markdown, Table, CSV, JSON, JUnit, HTML}

// ParseFormat reads a report format. Its refusal, a usage error, names
// the value and the formats accepted; the caller puts where the value came
// from in front of it (`--format "xml": expected one of ...`).
func ParseFormat(s string) (Format, error) {
	if f := Format(s); slices.Contains(Formats, f) {
		return f, nil
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fail.Usagef("%q: expected one of %s", s, strings.Join(names, ", "))
}
