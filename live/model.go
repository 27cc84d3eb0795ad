// Package live is kvsweep watch: a live terminal view of running sweeps
// on bubbletea and lipgloss (the only package that links them). The view
// polls the sweeps through the scheduler's status path (one shared poll
// per interval on Slurm, the poll cache), reads the selected cell's log
// tail, GPU samples and telemetry from the sweep directory, and cancels
// or resubmits a cell as kvsweep cancel and resubmit do, asking first.
// Quitting leaves the sweep as it is.
package live

import (
	"time"

	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/telemetry"
)

// Sweep is one sweep's cells as the last poll saw them.
type Sweep struct {
	Dir     string
	ID      string // the sweep id (manifest)
	Cells   []scheduler.CellStatus
	Err     error     // why the sweep could not be polled (Cells: the last that could)
	Started time.Time // the first submission of the journal; zero: none yet
	// GPU is each cell's GPU samples summarised, by cell id, for the
	// cells whose job wrote gpu.jsonl.
	GPU map[string]gpustat.Summary
}

// Detail is what the view shows of the selected cell below the table.
type Detail struct {
	Dir, Cell string   // the sweep directory and the cell id it is of
	Logs      []string // the cell's log files (sweep.LogFiles)
	Log       string   // the one shown
	Tail      string   // its last lines
	LogErr    string   // why there is no tail
	Figures   []telemetry.Figure
	TelNote   string // the telemetry's note, or why there are no figures
}

// Snapshot is one poll of every sweep the view follows.
type Snapshot struct {
	At     time.Time
	Sweeps []Sweep
}

// row is one cell of the table, where it is in the snapshot.
type row struct {
	sweep int
	cell  int
}

// rows lists the cells of every sweep, in order.
func (s Snapshot) rows() []row {
	var out []row
	for i, sw := range s.Sweeps {
		for j := range sw.Cells {
			out = append(out, row{i, j})
		}
	}
	return out
}

// cellsOf lists every cell of every sweep.
func (s Snapshot) cellsOf() []scheduler.CellStatus {
	var out []scheduler.CellStatus
	for _, sw := range s.Sweeps {
		out = append(out, sw.Cells...)
	}
	return out
}

// Elapsed is the time since the first submission of any sweep, and the
// remaining time estimated at the pace so far: the time each ended cell
// took on average in wall-clock terms, times the cells not ended. ok is
// false when nothing ended yet (no pace to go by).
func (s Snapshot) Elapsed() (elapsed, remaining time.Duration, ok bool) {
	var start time.Time
	for _, sw := range s.Sweeps {
		if !sw.Started.IsZero() && (start.IsZero() || sw.Started.Before(start)) {
			start = sw.Started
		}
	}
	if start.IsZero() {
		return 0, 0, false
	}
	elapsed = s.At.Sub(start)
	done, left := 0, 0
	for _, c := range s.cellsOf() {
		if scheduler.Terminal(c.State) {
			done++
		} else {
			left++
		}
	}
	if done == 0 {
		return elapsed, 0, false
	}
	return elapsed, time.Duration(float64(elapsed) * float64(left) / float64(done)), true
}
