package loadsearch

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/kvsweep/kvsweep/frontier"
)

// Request is one probe of a round: a cell (its id without the load) at a
// load, to run Repeats times.
type Request struct {
	Cell    string  `json:"cell"`
	Load    float64 `json:"load"`
	Repeats int     `json:"repeats"`
}

// Result is what a probe gave: its repeats (each a job, Verdict Infra
// when it failed outside the test after its retries) and the GPU time
// they took (GPUs of the cell times the wall time of each repeat's job).
type Result struct {
	Cell     string
	Load     float64
	Repeats  []frontier.Repeat
	GPUHours float64
}

// Prober runs a round's probes, every cell's at once, and returns what
// each gave (a Result per Request; one missing reads as every repeat
// failed outside the test). A Prober asked again for a round it already
// started (the search was stopped and started again) goes on with it:
// nothing is run twice.
type Prober interface {
	Probe(ctx context.Context, round int, reqs []Request) ([]Result, error)
}

// Search is one search: its configuration, its answer so far and where
// it keeps its state ("" keeps none).
type Search struct {
	Config   Config
	Frontier *frontier.Frontier
	Dir      string
	Log      io.Writer
	state    *State
}

// Run runs rounds until every cell has its answer or the budget is
// reached, the frontier rewritten after each round (in Dir, with the
// state): each round asks p for the next probe of every cell not done.
func (s *Search) Run(ctx context.Context, p Prober) error {
	if s.Log == nil {
		s.Log = io.Discard
	}
	if s.state == nil {
		s.state = &State{Version: 1}
	}
	s.update()
	for round := s.lastRound() + 1; ; round++ {
		reqs, pending := s.plan(round)
		if len(reqs) == 0 {
			s.Frontier.Stopped = ""
			return s.save()
		}
		if !pending {
			if reqs = s.budget(reqs); len(reqs) == 0 {
				s.stop()
				return s.save()
			}
			s.state.Pending = &Round{Round: round, Requests: reqs}
			if err := s.saveState("plan", fmt.Sprintf("round %d: %d probes", round, len(reqs))); err != nil {
				return err
			}
		}
		fmt.Fprintf(s.Log, "kvsweep search: round %d: %s\n", round, describe(s.Config, reqs))
		results, err := p.Probe(ctx, round, reqs)
		if err != nil {
			return err
		}
		s.record(round, reqs, results)
		s.state.Pending = nil
		if err := s.save(); err != nil {
			return err
		}
		_ = s.journal("collect", fmt.Sprintf("round %d", round))
	}
}

// plan is the round's probes: the pending round's after a restart
// (pending true: planned, perhaps submitted, and run whole whatever the
// budget now says), else the next load of each cell not done.
func (s *Search) plan(round int) (reqs []Request, pending bool) {
	if pr := s.state.Pending; pr != nil && pr.Round == round {
		return pr.Requests, true
	}
	for _, c := range s.Frontier.Cells {
		if load, done, _ := s.Config.Next(c.Probes); !done {
			reqs = append(reqs, Request{Cell: c.ID, Load: load, Repeats: s.Config.Repeats})
		}
	}
	return reqs, false
}

// stop ends the search on its budget: each cell not done says what it
// knows (a cell done keeps its own note, or none).
func (s *Search) stop() {
	for i := range s.Frontier.Cells {
		c := &s.Frontier.Cells[i]
		if _, done, _ := s.Config.Next(c.Probes); !done {
			c.Note = "budget reached: " + s.known(c)
		}
	}
	fmt.Fprintf(s.Log, "kvsweep search: stopped: %s\n", s.Frontier.Stopped)
}

// budget is the part of a new round the budget leaves room for, saying
// in Stopped what stopped it. It is never applied to a pending round:
// that one's jobs may be running already.
func (s *Search) budget(reqs []Request) []Request {
	c := &s.Config
	if c.GPUHours > 0 && s.state.GPUHours >= c.GPUHours {
		s.Frontier.Stopped = fmt.Sprintf("--gpu-hours %s reached (%s GPU-hours used)", num(c.GPUHours), num(s.state.GPUHours))
		return nil
	}
	if c.MaxProbes > 0 {
		used := 0
		for _, cell := range s.Frontier.Cells {
			used += len(cell.Probes)
		}
		if left := c.MaxProbes - used; left < len(reqs) {
			if left <= 0 {
				s.Frontier.Stopped = fmt.Sprintf("--max-probes %d reached", c.MaxProbes)
				return nil
			}
			return reqs[:left]
		}
	}
	return reqs
}

// record adds a round's results to the frontier, each probe judged.
func (s *Search) record(round int, reqs []Request, results []Result) {
	byKey := map[string]*Result{}
	for i := range results {
		byKey[key(results[i].Cell, results[i].Load)] = &results[i]
		s.state.GPUHours += results[i].GPUHours
	}
	for _, r := range reqs {
		c := s.cell(r.Cell)
		if c == nil {
			continue
		}
		p := frontier.Probe{Round: round, Load: r.Load}
		if res := byKey[key(r.Cell, r.Load)]; res != nil {
			p.Repeats = res.Repeats
		}
		s.Config.Judge(&p)
		c.Probes = append(c.Probes, p)
	}
	s.update()
}

// update sets each cell's point and note from its probes.
func (s *Search) update() {
	for i := range s.Frontier.Cells {
		c := &s.Frontier.Cells[i]
		c.Point = s.Config.Point(c.Probes)
		_, done, note := s.Config.Next(c.Probes)
		c.Note = ""
		if done {
			c.Note = note
		}
	}
}

// known says what a cell not done knows: its bracket so far.
func (s *Search) known(c *frontier.Cell) string {
	b := s.Config.bracket(c.Probes)
	unit := frontier.Axis(s.Config.Axis).Unit()
	switch {
	case b.hasLo && b.hasHi:
		return fmt.Sprintf("the operating point is between %s and %s %s", num(b.lo), num(b.hi), unit)
	case b.hasLo:
		return fmt.Sprintf("the SLOs held up to %s %s", num(b.lo), unit)
	case b.hasHi:
		return fmt.Sprintf("an SLO broke at %s %s, the lowest load probed", num(b.hi), unit)
	}
	return "nothing probed yet"
}

func (s *Search) cell(id string) *frontier.Cell {
	for i := range s.Frontier.Cells {
		if s.Frontier.Cells[i].ID == id {
			return &s.Frontier.Cells[i]
		}
	}
	return nil
}

func (s *Search) lastRound() int {
	n := 0
	for _, c := range s.Frontier.Cells {
		for _, p := range c.Probes {
			n = max(n, p.Round)
		}
	}
	return n
}

// key names a probe of a cell: its load to the grid's precision.
func key(cell string, load float64) string {
	return fmt.Sprintf("%s@%.6g", cell, math.Round(load*1e6)/1e6)
}

func describe(c Config, reqs []Request) string {
	if len(reqs) == 1 {
		return fmt.Sprintf("1 probe (%s %s, %d repeats)", num(reqs[0].Load), frontier.Axis(c.Axis).Unit(), c.Repeats)
	}
	return fmt.Sprintf("%d probes of %d repeats", len(reqs), c.Repeats)
}
