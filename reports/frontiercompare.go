package reports

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/internal/table"
)

// FrontierComparison is two searches' operating points, cell by cell
// (matched by cell id): `kvsweep report --baseline A --candidate B` on
// two search directories.
type FrontierComparison struct {
	Baseline  string          `json:"baseline"`  // the searches' labels (Label, else Name)
	Candidate string          `json:"candidate"` //
	Axis      frontier.Axis   `json:"axis"`
	Unit      string          `json:"unit"`
	SLODiffer string          `json:"slo_differ,omitempty"` // the SLOs, when the searches judged by different ones
	Cells     []PointCompared `json:"cells"`
}

// PointCompared is one cell's operating points on both sides.
type PointCompared struct {
	Cell          string          `json:"cell"`
	Baseline      *frontier.Point `json:"baseline,omitempty"`
	Candidate     *frontier.Point `json:"candidate,omitempty"`
	BaselineNote  string          `json:"baseline_note,omitempty"`
	CandidateNote string          `json:"candidate_note,omitempty"`
	Only          string          `json:"only,omitempty"`  // "baseline" or "candidate": the one side that searched the cell
	Ratio         float64         `json:"ratio,omitempty"` // candidate's load / baseline's
	// Overlap says the two 95 % intervals overlap: the difference is not
	// established by the repeats.
	Overlap  bool   `json:"intervals_overlap,omitempty"`
	Sentence string `json:"sentence"`
}

// CompareFrontiers compares base's and cand's operating points per cell;
// both must vary the same axis.
func CompareFrontiers(base, cand *frontier.Frontier) (*FrontierComparison, error) {
	for _, f := range []*frontier.Frontier{base, cand} {
		if err := CheckFrontier(f); err != nil {
			return nil, fmt.Errorf("search %q: %w", f.Name, err)
		}
	}
	if base.Axis != cand.Axis {
		return nil, fail.Usagef("the baseline search varies %s and the candidate %s: their operating points do not compare", base.Axis, cand.Axis)
	}
	bl, cl := sideLabel(base), sideLabel(cand)
	if bl == cl {
		bl, cl = "the baseline ("+bl+")", "the candidate ("+cl+")"
	}
	c := &FrontierComparison{Baseline: bl, Candidate: cl, Axis: base.Axis, Unit: base.Axis.Unit(), Cells: []PointCompared{}}
	if !slices.Equal(base.SLO, cand.SLO) {
		c.SLODiffer = fmt.Sprintf("%s: %s; %s: %s", bl, sloText(base.SLO), cl, sloText(cand.SLO))
	}
	candBy := map[string]*frontier.Cell{}
	for i := range cand.Cells {
		candBy[cand.Cells[i].ID] = &cand.Cells[i]
	}
	seen := map[string]bool{}
	for i := range base.Cells {
		b := &base.Cells[i]
		seen[b.ID] = true
		c.Cells = append(c.Cells, c.compare(b, candBy[b.ID]))
	}
	for i := range cand.Cells {
		if k := &cand.Cells[i]; !seen[k.ID] {
			c.Cells = append(c.Cells, c.compare(nil, k))
		}
	}
	return c, nil
}

func sideLabel(f *frontier.Frontier) string {
	if f.Label != "" {
		return f.Label
	}
	if f.Name != "" {
		return f.Name
	}
	return "search"
}

// compare is one cell's comparison; b or k is nil where that side did
// not search the cell.
func (c *FrontierComparison) compare(b, k *frontier.Cell) PointCompared {
	p := PointCompared{}
	switch {
	case k == nil:
		p.Cell, p.Only, p.Baseline, p.BaselineNote = b.Title(), "baseline", b.Point, b.Note
		p.Sentence = fmt.Sprintf("only %s searched this cell: %s", c.Baseline, pointOrNote(b, c.Unit))
		return p
	case b == nil:
		p.Cell, p.Only, p.Candidate, p.CandidateNote = k.Title(), "candidate", k.Point, k.Note
		p.Sentence = fmt.Sprintf("only %s searched this cell: %s", c.Candidate, pointOrNote(k, c.Unit))
		return p
	}
	p.Cell, p.Baseline, p.Candidate, p.BaselineNote, p.CandidateNote = b.Title(), b.Point, k.Point, b.Note, k.Note
	bp, kp := b.Point, k.Point
	switch {
	case bp == nil && kp == nil:
		p.Sentence = fmt.Sprintf("neither search found an operating point (%s: %s; %s: %s)", c.Baseline, noteOr(b), c.Candidate, noteOr(k))
	case kp == nil:
		p.Sentence = fmt.Sprintf("%s found no operating point (%s); %s: %s", c.Candidate, noteOr(k), c.Baseline, pointText(bp, c.Unit))
	case bp == nil:
		p.Sentence = fmt.Sprintf("%s found no operating point (%s); %s: %s", c.Baseline, noteOr(b), c.Candidate, pointText(kp, c.Unit))
	case bp.Load == 0:
		p.Sentence = fmt.Sprintf("%s serves %s within the SLO, %s none (%s)", c.Candidate, pointText(kp, c.Unit), c.Baseline, pointText(bp, c.Unit))
	default:
		p.Ratio = kp.Load / bp.Load
		p.Overlap = kp.Low <= bp.High && bp.Low <= kp.High
		p.Sentence = fmt.Sprintf("%s serves %sx the %s within the SLO: %s vs %s %s", c.Candidate, ratioText(p.Ratio), axisWord(c.Axis),
			pmText(kp), pmText(bp), c.Unit)
		if p.Overlap {
			p.Sentence += " (the 95 % intervals overlap: the repeats do not establish a difference)"
		}
	}
	return p
}

func axisWord(a frontier.Axis) string {
	if a == frontier.Concurrency {
		return "concurrency"
	}
	return "rate"
}

// ratioText is a ratio as the sentence gives it: 1.8, 1.0, 0.55, 12.
func ratioText(r float64) string {
	switch {
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 0, 64)
	case r >= 1:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

func noteOr(c *frontier.Cell) string {
	if c.Note != "" {
		return c.Note
	}
	return "no note"
}

func pointOrNote(c *frontier.Cell, unit string) string {
	if c.Point != nil {
		return pointText(c.Point, unit)
	}
	return "no operating point (" + noteOr(c) + ")"
}

// WriteFrontierComparison writes the comparison of two searches'
// operating points in format: a sentence per cell (markdown, table), a
// row per cell (CSV), the comparison (JSON), or the HTML frontier with
// both searches drawn on the same axes.
func WriteFrontierComparison(w io.Writer, format Format, base, cand *frontier.Frontier) error {
	c, err := CompareFrontiers(base, cand)
	if err != nil {
		return err
	}
	switch format {
	case JSON:
		return writeJSON(w, c)
	case CSV:
		return writeFrontierComparisonCSV(w, c)
	case HTML:
		return writeFrontierHTML(w, NewFrontierReport(cand), NewFrontierReport(base), c)
	case Markdown, Table:
		var b bytes.Buffer
		if format == Markdown {
			fmt.Fprintf(&b, "## Operating points: %s vs %s\n\n", table.Visible(c.Candidate), table.Visible(c.Baseline))
		} else {
			fmt.Fprintf(&b, "Operating points: %s vs %s\n\n", table.Visible(c.Candidate), table.Visible(c.Baseline))
		}
		if c.SLODiffer != "" {
			fmt.Fprintf(&b, "The searches judged by different SLOs (%s).\n\n", table.Visible(c.SLODiffer))
		}
		rows := make([][]string, 0, len(c.Cells))
		for _, p := range c.Cells {
			rows = append(rows, []string{p.Cell, p.Sentence})
		}
		if err := table.Write(&b, table.Format(format), []string{"cell", "operating points"}, rows); err != nil {
			return err
		}
		return writeLimited(w, format, b.Bytes())
	}
	return fail.Usagef("--format %s: a comparison of searches is markdown, table, csv, json or html", format)
}

func writeFrontierComparisonCSV(w io.Writer, c *FrontierComparison) error {
	cw := newCSV(w)
	_ = cw.Write([]string{"cell", "unit", "baseline", "baseline_load", "baseline_low", "baseline_high",
		"candidate", "candidate_load", "candidate_low", "candidate_high", "ratio", "intervals_overlap", "only", "sentence"})
	side := func(p *frontier.Point) []string {
		if p == nil {
			return []string{"", "", ""}
		}
		return []string{num(p.Load), num(p.Low), num(p.High)}
	}
	for _, p := range c.Cells {
		ratio := ""
		if p.Ratio > 0 {
			ratio = num(p.Ratio)
		}
		_ = cw.Write(slices.Concat([]string{p.Cell, c.Unit, c.Baseline}, side(p.Baseline), []string{c.Candidate}, side(p.Candidate),
			[]string{ratio, strconv.FormatBool(p.Overlap), p.Only, p.Sentence}))
	}
	cw.Flush()
	return cw.Error()
}
