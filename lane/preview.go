package lane

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	harnessfile "github.com/kvsweep/kvsweep/harness"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/rules"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// PreviewOf is what kvsweep result read --spec previews: the spec, the
// cell (its name or id; "" for the first), the file read and the cases
// asked for (none: the cell's planned ones).
type PreviewOf struct {
	Spec, Cell, File string
	Cases            []string
}

// A Preview is what collect would record of one cell of a spec from a
// file its harness wrote, without a sweep.
type Preview struct {
	Result *result.Result
	Cell   matrix.Cell // its Cases those read for
	How    string      // how the file was read, in words
}

// PreviewResult reads b, the file p.File, as collect would for the cell
// p names: by the spec's harness.result (format, case_by, values) or
// harness.native_result, or as result.json when the spec names neither;
// for the cell's planned cases (or p.Cases); with the spec's validity
// rules of each case and of the cell's topology applied.
func PreviewResult(p PreviewOf, b []byte) (*Preview, error) {
	s, c, err := previewCell(p)
	if err != nil {
		return nil, err
	}
	rd := readerOf(s.Harness)
	pv := &Preview{Cell: c, How: rd.how}
	if rd.spec.File() == "" {
		if pv.Result, err = result.ParseResult(b); err != nil {
			if line, col := result.Position(b, err); line > 0 {
				return nil, fmt.Errorf("%s:%d:%d: %v", p.File, line, col, err)
			}
			return nil, fmt.Errorf("%s: %v", p.File, err)
		}
	} else if pv.Result, err = rd.spec.ReadFile(p.File, b, sweep.Cell{ID: c.ID, Name: c.Name, Cases: c.Cases}); err != nil {
		return nil, err
	}
	applyRules(s, c.Topology, pv.Result)
	previewCache(s, pv.Result)
	return pv, nil
}

// previewCell parses and expands the spec and picks the cell, its cases
// those asked for when any were.
func previewCell(p PreviewOf) (*matrix.Spec, matrix.Cell, error) {
	src, err := sweep.ReadFile(filepath.Dir(p.Spec), filepath.Base(p.Spec), 4<<20)
	if err != nil {
		return nil, matrix.Cell{}, err
	}
	s, err := matrix.Parse(p.Spec, src)
	if err != nil {
		return nil, matrix.Cell{}, err
	}
	cells, err := matrix.Expand(s)
	if err != nil {
		return nil, matrix.Cell{}, err
	}
	i := 0
	if p.Cell != "" {
		if i = slices.IndexFunc(cells, func(c matrix.Cell) bool { return c.Name == p.Cell || c.ID == p.Cell }); i < 0 {
			var names []string
			for _, c := range cells {
				names = append(names, c.Name)
			}
			return nil, matrix.Cell{}, fail.Usagef("--cell %q: %s has no such cell (its cells: %s)", p.Cell, p.Spec, strings.Join(names, ", "))
		}
	}
	c := cells[i]
	if len(p.Cases) > 0 {
		c.Cases = p.Cases
	}
	return s, c, nil
}

// specReader is how the spec says a cell's file is read, and that in
// words.
type specReader struct {
	spec harnessfile.Spec
	how  string
}

func readerOf(h matrix.Harness) specReader {
	switch {
	case h.Native != nil:
		return specReader{spec: harnessfile.Spec{Native: render.NativeResult(h.Native)}, how: "the spec's harness.native_result"}
	case h.Client != nil:
		cl := &sweep.ClientResult{Format: h.Client.Format, File: h.Client.File, CaseBy: h.Client.CaseBy, Values: h.Client.Values}
		by := cl.CaseBy
		if by == "" {
			by = harnessfile.ByLine
		}
		return specReader{spec: harnessfile.Spec{Client: cl}, how: fmt.Sprintf("the spec's harness.result (%s, case_by: %s)", cl.Format, by)}
	}
	return specReader{how: "result.json v1 (the spec names no harness.result or native_result)"}
}

// applyRules turns each PASS of res that breaks a validity rule of its
// case or of the topology into INVALID, in collect's words.
func applyRules(s *matrix.Spec, topology string, res *result.Result) {
	var topo []rules.Rule
	if t := s.Topologies[topology]; t != nil {
		topo = t.Require
	}
	for i := range res.Cases {
		cs := &res.Cases[i]
		if cs.Verdict != result.Pass {
			continue
		}
		var rs []rules.Rule
		if c := s.Cases[cs.ID]; c != nil {
			rs = append(rs, c.Require...)
		}
		testrun.ApplyRules(cs, append(rs, topo...))
	}
}

// PlannedReported is the error of a result whose cases are not the
// planned ones: each planned case it lacks, each case nobody planned.
func PlannedReported(file string, planned []string, res *result.Result) error {
	var reported []string
	for _, c := range res.Cases {
		reported = append(reported, c.ID)
	}
	var msgs []string
	for _, id := range planned {
		if !slices.Contains(reported, id) {
			msgs = append(msgs, fmt.Sprintf("%s: planned, but %s has no such case (it reported %s)", id, file, listOr(reported)))
		}
	}
	for _, id := range reported {
		if !slices.Contains(planned, id) {
			msgs = append(msgs, fmt.Sprintf("%s: reported by %s, but the cell planned no such case (it planned %s)", id, file, listOr(planned)))
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

func listOr(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
