package reports

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// writeProfiles writes a summary's profiles (markdown, table): for each
// profiled cell, the tool, its files with their sizes (they are among
// the cell's evidence too, attached in JUnit and linked in the HTML
// page), and what could not be profiled; nothing when no cell was.
func writeProfiles(b *bytes.Buffer, format Format, r *testrun.Run) error {
	total := 0
	for _, c := range r.Cells {
		if c.Profile != nil {
			total++
		}
	}
	if total == 0 {
		return nil
	}
	if format == "markdown" {
		b.WriteString("\n### Profiles\n")
	} else {
		b.WriteString("\nProfiles\n")
	}
	b.WriteString("\n")
	fit := fitter{format: format, limit: StepSummaryLimit - b.Len() - 4096}
	var rows [][]string
	for _, c := range r.Cells {
		p := c.Profile
		if p == nil {
			continue
		}
		row := []string{c.Name, p.Tool, profileFilesText(c, p), profileNoteText(p)}
		if !fit.fits(row) {
			break
		}
		rows = append(rows, row)
	}
	if err := table.Write(b, table.Format(format), []string{"cell", "profiler", "files", "note"}, rows); err != nil {
		return err
	}
	cutNote(b, total-len(rows))
	return nil
}

// profileFilesText is "cells/ID/profile/0.nsys-rep (1.2 MB)", each file,
// the first few of many.
func profileFilesText(c testrun.CellResult, p *testrun.ProfileResult) string {
	const shown = 5
	var parts []string
	for i, f := range p.Files {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(p.Files)-shown))
			break
		}
		parts = append(parts, fmt.Sprintf("%s/%s/%s (%s)", sweep.CellsDir, c.CellID, f.Path, sweep.Size(f.Bytes)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// profileNoteText is what could not be profiled, and whether that fails
// the profiled cases.
func profileNoteText(p *testrun.ProfileResult) string {
	if len(p.Notes) == 0 {
		return ""
	}
	s := strings.Join(p.Notes, "; ")
	if p.Required {
		return "required, not taken: " + s
	}
	return s + " (not required: fails nothing)"
}
