package loadsearch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/matrix"
)

// Options are `kvsweep search`'s: the search directory, the budget and
// the arm's label.
type Options struct {
	Out       string
	MaxProbes int
	GPUHours  float64
	Label     string
	// Scheduler, Interval and Store are the lane's (its scheduler, its
	// polls, the history store).
	Scheduler, Store string
	Interval         time.Duration
}

// Main runs the search of the spec args names (one path) through the
// lane (its scheduler and store; quiet, polled every o.Interval) into
// o.Out, going on with the one there, and prints the frontier table on
// the lane's Stdout.
func Main(ctx context.Context, l *lane.Lane, args []string, o Options) (*frontier.Frontier, error) {
	if len(args) != 1 {
		return nil, fail.Usagef("expected one argument, the spec file; got %d", len(args))
	}
	specPath := args[0]
	l.Interval, l.Submit.Quiet = o.Interval, true
	if o.Out == "" {
		return nil, fail.Usagef("--out DIR is required")
	}
	if o.MaxProbes < 0 || o.GPUHours < 0 {
		return nil, fail.Usagef("--max-probes %d, --gpu-hours %g: expected 0 (no limit) or more", o.MaxProbes, o.GPUHours)
	}
	abs, err := filepath.Abs(specPath)
	if err != nil {
		return nil, err
	}
	spec, cells, src, err := matrix.LoadCells(abs)
	if err != nil {
		return nil, err
	}
	if spec.Search == nil {
		return nil, fail.Usagef("%s has no search section (expected search: {axis, min, max, step, slo: {...}}; see docs/search.md)", specPath)
	}
	sum := sha256.Sum256(src)
	s := &Search{Config: Config{Search: *spec.Search, MaxProbes: o.MaxProbes, GPUHours: o.GPUHours}, Dir: o.Out, Log: l.Stderr,
		Frontier: &frontier.Frontier{Name: spec.Name, Label: o.Label, Axis: frontier.Axis(spec.Search.Axis), Repeats: spec.Search.Repeats, Cells: CellsOf(spec, cells)}}
	for _, slo := range spec.Search.SLO {
		s.Frontier.SLO = append(s.Frontier.SLO, frontier.SLO{Metric: slo.Metric, Max: slo.Max})
	}
	keep := map[string]string{"the spec": abs, "a spec of sha256": hex.EncodeToString(sum[:8]), "--label": o.Label}
	if err := s.Open(keep, func() string {
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		return spec.Name + "-search-" + hex.EncodeToString(b)
	}); err != nil {
		return nil, err
	}
	err = s.Run(ctx, &SweepProber{Lane: l, Spec: abs, Dir: o.Out, ID: s.ID()})
	if err != nil {
		return s.Frontier, err
	}
	return s.Frontier, WriteTable(l.Stdout, s.Frontier, table.Text)
}

// WriteTable prints the frontier: per cell the operating point with its
// 95 % interval, the smallest change the repeats could detect, the
// throughput there, the loads probed (✓ met the SLOs, ✗ broke one, ~
// noisy) and what is known when there is no point.
func WriteTable(w io.Writer, f *frontier.Frontier, format table.Format) error {
	unit := f.Axis.Unit()
	var rows [][]string
	for _, c := range f.Cells {
		point, interval, mdc, tput := "-", "-", "-", "-"
		if p := c.Point; p != nil {
			point, interval = num(p.Load)+" "+unit, num(p.Low)+" .. "+num(p.High)
			if p.MinDetectable > 0 {
				mdc = "±" + num(p.MinDetectable)
			}
			if p.Throughput.N > 0 {
				tput = fmt.Sprintf("%s ± %s", num(p.Throughput.Mean), num(p.Throughput.High-p.Throughput.Mean))
			}
		}
		var probed []string
		for _, p := range c.Probes {
			mark := "✗"
			if p.Infra {
				mark = "!" // every repeat failed outside the test
			} else if p.Meets {
				mark = "✓"
			}
			if p.Noisy {
				mark += "~"
			}
			probed = append(probed, num(p.Load)+mark)
		}
		rows = append(rows, []string{cellLabel(c), point, interval, mdc, tput, strings.Join(probed, " "), c.Note})
	}
	if err := table.Write(w, format, []string{"cell", "operating point", "95% interval", "min detectable", "throughput req/s", "probed", "note"}, rows); err != nil {
		return err
	}
	if f.Stopped != "" {
		_, err := fmt.Fprintf(w, "stopped: %s\n", f.Stopped)
		return err
	}
	return nil
}

func cellLabel(c frontier.Cell) string {
	if c.Name == "" {
		return c.ID
	}
	return c.Name + " (" + c.ID + ")"
}
