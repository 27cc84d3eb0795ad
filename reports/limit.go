package reports

import (
	"bytes"
	"fmt"
	"io"
)

// StepSummaryLimit is GitHub's limit on a job's step summary.
const StepSummaryLimit = 1 << 20

// fitter keeps the rows of a markdown table that fit in limit bytes (by
// their cell widths), one row at a time, so a huge sweep's rows are made
// and laid out only while they fit. Other formats keep all.
type fitter struct {
	format Format
	limit  int
	widths []int
	n      int // rows that fit so far
}

// fits says whether r, the table's next row, still fits.
func (f *fitter) fits(r []string) bool {
	if f.format != "markdown" {
		return true
	}
	// The table pads every row to the widest cell of each column.
	if len(f.widths) < len(r) {
		f.widths = append(f.widths, make([]int, len(r)-len(f.widths))...)
	}
	line := 2
	for j, c := range r {
		f.widths[j] = max(f.widths[j], len(c))
		line += f.widths[j] + 3
	}
	if (f.n+3)*line > f.limit {
		return false
	}
	f.n++
	return true
}

// cutNote says what a fitter left out.
func cutNote(b *bytes.Buffer, cut int) {
	if cut > 0 {
		fmt.Fprintf(b, "\n> **Truncated:** %d more rows were cut to fit GitHub's 1 MiB step-summary limit. The CSV or JSON report (`--format csv|json`) has everything.\n", cut)
	}
}

// writeLimited writes markdown that fits a GitHub step summary: past the
// limit, whole lines are cut and a note says how many.
func writeLimited(w io.Writer, format Format, b []byte) error {
	if format != "markdown" || len(b) <= StepSummaryLimit {
		_, err := w.Write(b)
		return err
	}
	const room = 512 // for the note
	cut := bytes.LastIndexByte(b[:StepSummaryLimit-room], '\n') + 1
	kept := bytes.Count(b[:cut], []byte("\n"))
	total := bytes.Count(b, []byte("\n"))
	if _, err := w.Write(b[:cut]); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n> **Truncated:** %d of %d lines were cut to fit GitHub's 1 MiB step-summary limit. The CSV or JSON report (`--format csv|json`) has everything.\n", total-kept, total)
	return err
}
