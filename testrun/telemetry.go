package testrun

import (
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/telemetry"
)

// addTelemetry derives the cell's figures from the series its job
// scraped, per case window where the cell marked them
// (sweep.CaseWindowsFile) and over the whole cell where it marked none,
// and adds them to each case (where the case has no metric of that
// name), for the validity rules and the comparisons; a case the windows
// do not name, in a cell that marked some, gets none (the note says
// which).
func addTelemetry(cr *CellResult, files *sweep.CellFiles) {
	b, ok := optional(files, sweep.TelemetryFile, telemetry.MaxFile)
	if !ok {
		cr.Telemetry = &telemetry.Summary{Note: "no " + sweep.TelemetryFile}
		return
	}
	var windows []byte
	var unreadable string
	if files.Has(sweep.CaseWindowsFile) {
		var err error
		if windows, err = files.ReadFile(sweep.CaseWindowsFile, telemetry.MaxWindowsFile); err != nil {
			unreadable = sweep.CaseWindowsFile + " not read (" + err.Error() + "): figures over the whole cell"
		}
	}
	d := telemetry.DeriveWindows(b, windows)
	cr.Telemetry = &d.Summary
	var unmarked []string
	for i := range cr.Cases {
		cs := &cr.Cases[i]
		figs := d.Cell
		if len(d.Windows) > 0 {
			var marked bool
			if figs, marked = d.Cases[cs.ID]; !marked {
				unmarked = append(unmarked, cs.ID)
			}
		}
		for _, f := range figs {
			if _, has := cs.Metrics.Get(f.Name); !has {
				cs.Metrics = append(cs.Metrics, result.Metric{Name: f.Name, Value: f.Value, Unit: f.Unit, Direction: f.Direction})
			}
		}
	}
	notes := []string{}
	for _, n := range []string{d.Summary.Note, unreadable} {
		if n != "" {
			notes = append(notes, n)
		}
	}
	if len(unmarked) > 0 {
		slices.Sort(unmarked)
		notes = append(notes, "no case window for "+strings.Join(unmarked, ", ")+": no telemetry figures")
	}
	cr.Telemetry.Note = strings.Join(notes, "; ")
}
