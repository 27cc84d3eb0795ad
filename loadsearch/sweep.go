package loadsearch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// SweepProber runs each round as one sweep of the spec through the lane
// (render, submit, watch with the spec's infra retries, collect into the
// history store): every probe's cell at its load, once per repeat, the
// load and the repeat's number set as the cell's parameters (the search's
// axis and SearchRepeatAxis). The sweep of round N is Dir/round-NN; asked
// for a round whose sweep is there, it goes on with it (the lane submits
// only what was never submitted), never renders or submits it again.
type SweepProber struct {
	Lane *lane.Lane
	// Spec is the spec's path; Dir the search directory; ID the search's
	// id, which names its sweeps.
	Spec, Dir, ID string
}

// BaseID is a cell's id without the search's load and repeat: the cell
// of the spec's matrix a probe belongs to.
func BaseID(params map[string]string, cases []string, axis string) string {
	p := maps.Clone(params)
	delete(p, axis)
	delete(p, matrix.SearchRepeatAxis)
	return matrix.CellID(p, cases)
}

// Probe runs the round's sweep and reads each repeat from its cells.
func (sp *SweepProber) Probe(ctx context.Context, round int, reqs []Request) ([]Result, error) {
	dir := filepath.Join(sp.Dir, RoundDir(round))
	started := time.Now()
	m, err := sweep.ReadManifest(dir)
	l := *sp.Lane
	switch {
	case err == nil:
		_ = Journal(sp.Dir, "adopt", RoundDir(round))
	case errors.Is(err, os.ErrNotExist):
		l.Render.Out, l.Render.SweepID, l.Render.Cells = dir, fmt.Sprintf("%s-r%02d", sp.ID, round), sp.cells(reqs)
		p, err := l.Prepare(ctx, sp.Spec)
		if err != nil {
			return nil, err
		}
		m = p.Manifest
		_ = Journal(sp.Dir, "render", fmt.Sprintf("%s: %d cells", RoundDir(round), len(m.Cells)))
	default:
		return nil, err
	}
	out, err := l.Run(ctx, &lane.Prepared{Dir: dir, Manifest: m}, "")
	if err != nil {
		return nil, err
	}
	return sp.results(round, m, out, time.Since(started)), nil
}

// cells is the round's cells: each probe's cell of the spec (the base
// expansion, at the start load and repeat 1) at its load, once per
// repeat, built directly (matrix.Rebuild): the matrix is never expanded
// again, so a round's size is its probes', not the spec's axes times
// every load of the round.
func (sp *SweepProber) cells(reqs []Request) func(*matrix.Spec, []matrix.Cell) ([]matrix.Cell, error) {
	return func(spec *matrix.Spec, base []matrix.Cell) ([]matrix.Cell, error) {
		s := spec.Search
		if s == nil {
			return nil, fmt.Errorf("%s: no search section", sp.Spec)
		}
		byID := map[string][]matrix.Cell{}
		for _, c := range base {
			id := BaseID(c.Params, c.Cases, s.Axis)
			byID[id] = append(byID[id], c)
		}
		var want []matrix.Cell
		for _, r := range reqs {
			for _, c := range byID[r.Cell] {
				for i := 1; i <= r.Repeats; i++ {
					p := maps.Clone(c.Params)
					p[s.Axis], p[matrix.SearchRepeatAxis] = matrix.FormatLoad(r.Load), strconv.Itoa(i)
					want = append(want, matrix.Cell{Params: p, Cases: c.Cases})
				}
			}
		}
		return matrix.Rebuild(spec, want)
	}
}

// results reads each probe's repeats from the collected cells.
func (sp *SweepProber) results(round int, m *sweep.Manifest, out *lane.Outcome, wall time.Duration) []Result {
	axis, cells := "", map[string]sweep.Cell{}
	for _, c := range m.Cells {
		cells[c.ID] = c
		for _, k := range []string{matrix.SearchRate, matrix.SearchConcurrency} {
			if _, ok := c.Params[k]; ok {
				axis = k
			}
		}
	}
	elapsed := map[string]string{}
	for _, c := range out.Cells {
		elapsed[c.ID] = c.Elapsed
	}
	byKey := map[string]*Result{}
	var order []string
	for _, c := range out.Run.Cells {
		mc, ok := cells[c.CellID]
		if !ok {
			continue
		}
		load, _ := strconv.ParseFloat(mc.Params[axis], 64)
		base := BaseID(mc.Params, mc.Cases, axis)
		k := key(base, load)
		if byKey[k] == nil {
			byKey[k] = &Result{Cell: base, Load: load}
			order = append(order, k)
		}
		r := byKey[k]
		rep := Repeat(c)
		rep.Run = RoundDir(round)
		r.Repeats = append(r.Repeats, rep)
		r.GPUHours += float64(gpus(m, c.CellID)) * seconds(elapsed[c.CellID], wall) / 3600
	}
	res := make([]Result, 0, len(order))
	for _, k := range order {
		res = append(res, *byKey[k])
	}
	return res
}

// Repeat is what a collected cell says of one repeat: its verdict (Infra
// when it failed outside the test after its retries; the worst case's
// verdict when it has a result; else its outcome) and its figures, each
// the worst over its cases (the highest, or the lowest of a figure where
// higher is better).
func Repeat(c testrun.CellResult) frontier.Repeat {
	rep := frontier.Repeat{Cell: c.CellID, Figures: map[string]float64{}}
	switch {
	case c.Class == testrun.ClassInfra:
		rep.Verdict = Infra
		return rep
	case c.Outcome == testrun.OK:
		rep.Verdict = result.Pass
	default:
		rep.Verdict = c.Outcome
	}
	for _, cs := range c.Cases {
		if rep.Verdict == result.Pass && cs.Verdict != result.Pass && cs.Verdict != result.Skip {
			rep.Verdict = cs.Verdict
		}
		for _, mt := range cs.Metrics {
			old, seen := rep.Figures[mt.Name]
			higher := mt.Direction == "higher"
			if !seen || (higher && mt.Value < old) || (!higher && mt.Value > old) {
				rep.Figures[mt.Name] = mt.Value
			}
		}
	}
	return rep
}

func gpus(m *sweep.Manifest, cellID string) int {
	for _, c := range m.Cells {
		if c.ID == cellID {
			if j := m.JobByName(c.Job); j != nil {
				return max(1, j.Res.Nodes) * j.Res.GPUsPerNode
			}
		}
	}
	return 0
}

// seconds is a Slurm elapsed time ([D-]HH:MM:SS, MM:SS), or fallback when
// the scheduler did not say.
func seconds(elapsed string, fallback time.Duration) float64 {
	days := 0
	if d, rest, ok := strings.Cut(elapsed, "-"); ok {
		days, _ = strconv.Atoi(d)
		elapsed = rest
	}
	parts := strings.Split(elapsed, ":")
	if elapsed == "" || len(parts) > 3 {
		return fallback.Seconds()
	}
	total := 0.0
	for _, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return fallback.Seconds()
		}
		total = total*60 + v
	}
	return float64(days)*86400 + total
}

// A SweepProber is what a Search asks.
var _ Prober = (*SweepProber)(nil)

// CellsOf is a spec's cells as the search's frontier names them: each
// cell of the matrix without the load, its id and name.
func CellsOf(spec *matrix.Spec, cells []matrix.Cell) []frontier.Cell {
	var out []frontier.Cell
	seen := map[string]bool{}
	for _, c := range cells {
		id := BaseID(c.Params, c.Cases, spec.Search.Axis)
		if !seen[id] {
			seen[id] = true
			name := strings.Replace(c.Name, "-"+spec.Search.Axis+"-"+c.Params[spec.Search.Axis], "", 1)
			out = append(out, frontier.Cell{ID: id, Name: strings.Replace(name, "-"+matrix.SearchRepeatAxis+"-1", "", 1)})
		}
	}
	return out
}
