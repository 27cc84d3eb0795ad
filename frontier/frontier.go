// Package frontier is the operating-point search's answer as a file: for
// each cell, the loads probed (each repeated, with the throughput and
// latency figures of every repeat), whether each met the SLOs, and the
// operating point found, the highest load at which every SLO holds, with
// its 95 % confidence interval. `kvsweep search` writes it into the
// search directory (FileName, rewritten after every round); the reports
// read it (markdown, JSON, the HTML frontier, the comparison of two
// searches' operating points).
package frontier

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FileName is the file a search directory holds its answer in.
const FileName = "frontier.json"

// Version is the format's version; a reader refuses any other.
const Version = 1

// MaxFileBytes bounds a read of the file: a frontier of thousands of
// probes is far smaller.
const MaxFileBytes = 16 << 20

// Axis is the load a search varies.
type Axis string

// The load axes.
const (
	Rate        Axis = "rate"        // requests per second offered
	Concurrency Axis = "concurrency" // requests in flight
)

// Unit is the axis's unit as reports print it.
func (a Axis) Unit() string {
	if a == Concurrency {
		return "concurrent"
	}
	return "req/s"
}

// Well-known figure names of a probe's repeats (any other name a
// harness reports may appear as well).
const (
	Throughput = "throughput_req_s" // completed requests per second
	TTFTP99    = "ttft_p99_ms"
	ITLP99     = "itl_p99_ms"
	Failed     = "failed" // failed requests
)

// Frontier is one search's answer.
type Frontier struct {
	Version int    `json:"version"`
	Name    string `json:"name"`            // the spec's name
	Label   string `json:"label,omitempty"` // the arm, e.g. "kvcr" or "bare-vllm"
	Axis    Axis   `json:"axis"`
	SLO     []SLO  `json:"slo"`
	Repeats int    `json:"repeats"` // repeats each probe runs
	Cells   []Cell `json:"cells"`
	// Stopped says why the search ended before every cell had its
	// point (a budget reached: "--max-probes 12 reached"); empty when
	// it finished.
	Stopped string `json:"stopped,omitempty"`
}

// SLO is one objective: the figure's value judged over a probe's repeats
// must be at most Max.
type SLO struct {
	Metric string  `json:"metric"`
	Max    float64 `json:"max"`
}

// Cell is one cell's search: every cell of the spec's matrix but the load.
type Cell struct {
	ID string `json:"id"`
	// Name is the cell's name for people (its parameters but the load).
	Name   string  `json:"name,omitempty"`
	Probes []Probe `json:"probes"` // in the order they were probed
	Point  *Point  `json:"point,omitempty"`
	// Note says what is known when Point is nil or uncertain: "every
	// load probed met the SLOs (up to 64 req/s)", "the lowest load
	// probed broke ttft_p99_ms", "budget reached".
	Note string `json:"note,omitempty"`
}

// Title is how reports name the cell: "NAME (ID)", or the id alone.
func (c *Cell) Title() string {
	if c.Name == "" || c.Name == c.ID {
		return c.ID
	}
	return c.Name + " (" + c.ID + ")"
}

// Probe is one load level of one cell, repeated.
type Probe struct {
	Round   int      `json:"round"` // the search round it ran in, from 1
	Load    float64  `json:"load"`
	Repeats []Repeat `json:"repeats"`
	// Meets says whether every SLO held, judged on the repeats.
	Meets bool `json:"meets"`
	// Broken names the SLOs that did not hold ("ttft_p99_ms 612 > 500").
	Broken []string `json:"broken,omitempty"`
	// Stats summarises each figure over the repeats.
	Stats map[string]Stat `json:"stats,omitempty"`
	// Noisy says the repeats spread more than the search's bound.
	Noisy bool `json:"noisy,omitempty"`
	// Infra says every repeat failed outside the test: the probe neither
	// met nor broke the SLOs (Meets is false, Broken empty), and the
	// search probed the load again.
	Infra bool `json:"infra,omitempty"`
}

// Repeat is one run of a probe: a job on the cluster.
type Repeat struct {
	Run     string             `json:"run"`     // the sweep directory it ran in, relative to the search directory
	Cell    string             `json:"cell"`    // the cell id in that sweep
	Verdict string             `json:"verdict"` // the cell's verdict (PASS, FAIL, INFRA, ...)
	Figures map[string]float64 `json:"figures"`
}

// Stat is a figure over a probe's repeats.
type Stat struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`  // the 95 % confidence interval of the mean
	High float64 `json:"high"` // (Low == High == Mean when N < 2)
	SD   float64 `json:"sd"`
}

// Point is a cell's operating point: the highest load probed at which
// every SLO held, and what the repeats say about where the true one lies.
type Point struct {
	Load float64 `json:"load"`
	// Low and High bound the true operating point with 95 % confidence
	// (High may be the lowest load that broke an SLO).
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// MinDetectable is the smallest change of the operating load the
	// repeats could tell from noise.
	MinDetectable float64 `json:"min_detectable,omitempty"`
	// Throughput at the operating point, over its repeats.
	Throughput Stat `json:"throughput"`
}

// Write writes f as dir/FileName, atomically, readable by all (0644).
func Write(dir string, f *Frontier) error {
	f.Version = Version
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".frontier-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600: the reports are read by others too.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, FileName))
}

// Read reads dir/FileName: a regular file (a link refused), at most
// MaxFileBytes, of this Version.
func Read(dir string) (*Frontier, error) {
	path := filepath.Join(dir, FileName)
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, st.Mode().Type())
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: over %d bytes", path, MaxFileBytes)
	}
	var f Frontier
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("%s: version %d, want %d", path, f.Version, Version)
	}
	return &f, nil
}
