package testrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/profiling"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// Bounds on what collect keeps of a cell's profile: files listed, notes.
const (
	maxProfileFiles = 200
	maxProfileNotes = 8
)

// ProfileResult is the profile a cell's job took (spec profile): the
// files the profilers wrote under the cell's profile folder, and what
// kept one from being taken.
type ProfileResult struct {
	Tool  string        `json:"tool"`
	Files []ProfileFile `json:"files,omitempty"`
	// Notes say what could not be profiled (nsys not in the image, an
	// engine that refused /start_profile, no file written).
	Notes []string `json:"notes,omitempty"`
	// Required: the spec makes a profile that could not be taken turn
	// the profiled cases' PASS into INVALID.
	Required bool `json:"required,omitempty"`
}

// ProfileFile is one file of a cell's profile: its path in the cell
// directory and its size.
type ProfileFile struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// addProfile records the cell's profile, lists its files among the
// cell's evidence, and, when the spec requires it, makes the profiled
// cases INVALID if it could not be taken.
func addProfile(cr *CellResult, files *sweep.CellFiles, m *sweep.Manifest) {
	p := m.Profile
	if p == nil || cr.Started == "" {
		return
	}
	pr := &ProfileResult{Tool: p.Tool, Required: p.Required}
	listed, other, more, err := files.ListFiles(sweep.ProfileDir, maxProfileFiles)
	if err != nil {
		pr.Notes = append(pr.Notes, err.Error())
	}
	for _, o := range other {
		pr.Notes = append(pr.Notes, "left out: "+o)
	}
	if more {
		pr.Notes = append(pr.Notes, fmt.Sprintf("more than %d files under %s/: the first %d are listed", maxProfileFiles, sweep.ProfileDir, maxProfileFiles))
	}
	for _, f := range listed {
		base := path.Base(f.Path)
		if f.Path == sweep.ProfileLogFile || strings.HasPrefix(base, ".") || base == "window.log" {
			continue
		}
		pr.Files = append(pr.Files, ProfileFile{Path: f.Path, Bytes: f.Size})
		if !slices.Contains(cr.Evidence, f.Path) {
			cr.Evidence = append(cr.Evidence, f.Path)
		}
	}
	pr.Notes = append(pr.Notes, profileNotes(files, pr.Files)...)
	if len(pr.Files) == 0 {
		pr.Notes = append(pr.Notes, "no profile file was written under "+sweep.ProfileDir+"/")
	}
	if len(pr.Notes) > maxProfileNotes {
		pr.Notes = append(pr.Notes[:maxProfileNotes], fmt.Sprintf("and %d more notes in %s", len(pr.Notes)-maxProfileNotes, sweep.ProfileLogFile))
	}
	cr.Profile = pr
	if p.Required && len(pr.Notes) > 0 {
		for i := range cr.Cases {
			if p.Profiled(cr.Cases[i].ID) || (len(p.Cases) == 0 && p.Tool == "nsys") {
				if cr.Cases[i].Verdict == result.Pass {
					invalidate(&cr.Cases[i], "profile.required: the profile was not taken: "+pr.Notes[0])
				}
			}
		}
	}
}

// profileNotes are the problems profile.jsonl records: each step that
// did not take, and each nsys-wrapped worker without a report.
func profileNotes(files *sweep.CellFiles, got []ProfileFile) []string {
	b, err := files.ReadFile(sweep.ProfileLogFile, sweep.MaxProfileLog)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return []string{sweep.ProfileLogFile + ": " + err.Error()}
	}
	var notes []string
	for i, raw := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l profiling.Line
		if err := json.Unmarshal(raw, &l); err != nil {
			notes = append(notes, fmt.Sprintf("%s:%d: not a profile line: %v", sweep.ProfileLogFile, i+1, err))
			continue
		}
		switch {
		case !l.OK:
			notes = append(notes, cut(profileNote(l)))
		case l.Event == "wrap" && !hasReport(got, l.Worker):
			notes = append(notes, fmt.Sprintf("nsys wrote no report for worker %s (expected %s/%s.nsys-rep; see the cell's log)", l.Worker, sweep.ProfileDir, l.Worker))
		}
	}
	return notes
}

// hasReport reports whether worker's nsys report is among the files.
func hasReport(got []ProfileFile, worker string) bool {
	for _, f := range got {
		base := path.Base(f.Path)
		if strings.HasPrefix(base, worker) && strings.HasSuffix(base, ".nsys-rep") {
			return true
		}
	}
	return false
}

// profiled is the cells that passed with profile files: their profiles
// are gathered after the failing cells' files.
func profiled(c CellResult) bool {
	return passed(c) && c.Profile != nil && len(c.Profile.Files) > 0
}

// profilePaths are the files of a cell's profile.
func profilePaths(c CellResult) []string {
	var out []string
	for _, f := range c.Profile.Files {
		out = append(out, f.Path)
	}
	return out
}

// profileNote is a step that did not take: "start of TC-01 on worker 0
// (URL): what it answered".
func profileNote(l profiling.Line) string {
	s := l.Event
	if l.Case != "" {
		s += " of " + l.Case
	}
	if l.Worker != "" {
		s += " on worker " + l.Worker
	}
	if l.Target != "" {
		s += " (" + l.Target + ")"
	}
	return s + ": " + strings.Join(strings.Fields(l.Detail), " ")
}
