package reports

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// Bounds of the evidence a summary lists: a large sweep's step summary
// stays readable (and under its limit).
const (
	maxEvidenceCells = 50
	maxEvidenceFiles = 20 // per cell
)

// writeEvidence lists each cell's evidence (markdown, table): its path in
// the sweep, its size, the first lines of a small text file, or why it
// cannot be shown. Nothing when no cell kept any.
func writeEvidence(b *bytes.Buffer, format Format, r *testrun.Run) error {
	cells := 0
	for _, c := range r.Cells {
		if len(c.Evidence) == 0 {
			continue
		}
		if cells == maxEvidenceCells {
			fmt.Fprintf(b, "\n(the evidence of further cells is left out: kvsweep report --format json lists it)\n")
			break
		}
		if cells == 0 {
			if format == "markdown" {
				b.WriteString("\n### Evidence\n")
			} else {
				b.WriteString("\nEvidence\n")
			}
		}
		cells++
		fmt.Fprintf(b, "\n%s (%s):\n", c.Name, testrun.OutcomeText(c))
		files := r.EvidenceOf(c)
		for i, e := range files {
			if i == maxEvidenceFiles {
				fmt.Fprintf(b, "- and %d more\n", len(files)-i)
				break
			}
			writeEvidenceItem(b, format, e)
		}
	}
	return nil
}

func writeEvidenceItem(b *bytes.Buffer, format Format, e testrun.Evidence) {
	what := e.Problem
	if what == "" && (e.Size > 0 || e.Head != "") {
		what = sweep.Size(e.Size)
	}
	if format == "markdown" {
		fmt.Fprintf(b, "- `%s`", strings.ReplaceAll(e.Path, "`", "'"))
	} else {
		fmt.Fprintf(b, "  %s", e.Path)
	}
	if what != "" {
		fmt.Fprintf(b, " (%s)", what)
	}
	b.WriteString("\n")
	if e.Head == "" {
		return
	}
	if format != "markdown" {
		for _, l := range strings.Split(e.Head, "\n") {
			fmt.Fprintf(b, "    | %s\n", l)
		}
		return
	}
	fence := "```"
	for strings.Contains(e.Head, fence) {
		fence += "`"
	}
	fmt.Fprintf(b, "\n  %s\n", fence)
	for _, l := range strings.Split(e.Head, "\n") {
		fmt.Fprintf(b, "  %s\n", l)
	}
	fmt.Fprintf(b, "  %s\n\n", fence)
}
