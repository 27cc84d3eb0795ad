package loadsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kvsweep/kvsweep/frontier"
	"github.com/kvsweep/kvsweep/sweep"
)

// The search directory: frontier.FileName (the answer so far, rewritten
// after each round), StateFile (what the search was started with, the
// round planned and not yet recorded, the GPU time used), JournalFile
// (one JSON line per plan, render, adoption and collection), and a sweep
// per round (RoundDir).
const (
	StateFile   = "search.json"
	JournalFile = "journal.jsonl"
	maxState    = 4 << 20
)

// RoundDir is the sweep directory of round n, relative to the search
// directory.
func RoundDir(n int) string { return fmt.Sprintf("round-%02d", n) }

// State is what a search keeps beside its frontier.
type State struct {
	Version int `json:"version"`
	// ID names the search's sweeps (ID-rNN).
	ID string `json:"id"`
	// Args are what the search was started with: started again with
	// others, it is refused.
	Args map[string]string `json:"args"`
	// Pending is the round planned (and perhaps submitted) whose results
	// are not yet in the frontier: started again, the search goes on
	// with it, never plans it anew.
	Pending  *Round  `json:"pending,omitempty"`
	GPUHours float64 `json:"gpu_hours"`
}

// Round is a round's probes.
type Round struct {
	Round    int       `json:"round"`
	Requests []Request `json:"requests"`
}

// Open starts the search in dir or goes on with the one there: a new one
// keeps f and args; one there must have been started with the same args,
// and its frontier replaces f's probes. The ID names its sweeps.
func (s *Search) Open(args map[string]string, newID func() string) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	b, err := sweep.ReadFile(s.Dir, StateFile, maxState)
	if errors.Is(err, os.ErrNotExist) {
		// The frontier first: a search killed between the two writes has
		// no state yet and starts anew.
		if err := frontier.Write(s.Dir, s.Frontier); err != nil {
			return err
		}
		s.state = &State{Version: 1, ID: newID(), Args: args}
		return s.saveState("start", s.state.ID)
	} else if err != nil {
		return err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil || st.Version != 1 {
		return fmt.Errorf("%s: not a search kvsweep can go on with (%v)", filepath.Join(s.Dir, StateFile), err)
	}
	for k, v := range args {
		if st.Args[k] != v {
			return fmt.Errorf("%s holds a search started with %s %q, not %q: go on with the same arguments, or give another --out", s.Dir, k, st.Args[k], v)
		}
	}
	s.state = &st
	f, err := s.readFrontier()
	if err != nil {
		return err
	}
	for i := range s.Frontier.Cells {
		for _, old := range f.Cells {
			if old.ID == s.Frontier.Cells[i].ID {
				s.Frontier.Cells[i].Probes = old.Probes
			}
		}
	}
	if s.Log == nil {
		s.Log = io.Discard
	}
	fmt.Fprintf(s.Log, "kvsweep search: going on with search %s in %s (%d rounds recorded)\n", st.ID, s.Dir, s.lastRound())
	return s.journal("resume", st.ID)
}

// readFrontier is the frontier of a search going on. A state without a
// frontier, no round planned and no round's sweep is a search stopped
// as it started (an earlier kvsweep wrote the state first): it has
// probed nothing, and goes on from an empty frontier.
func (s *Search) readFrontier() (*frontier.Frontier, error) {
	f, err := frontier.Read(s.Dir)
	if !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	if _, rerr := os.Lstat(filepath.Join(s.Dir, RoundDir(1))); s.state.Pending != nil || !errors.Is(rerr, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: the search in %s has planned or run rounds, and its answer is gone; give another --out", err, s.Dir)
	}
	return &frontier.Frontier{}, frontier.Write(s.Dir, s.Frontier)
}

// ID is the search's id ("" before Open).
func (s *Search) ID() string {
	if s.state == nil {
		return ""
	}
	return s.state.ID
}

// save writes the frontier, then the state.
func (s *Search) save() error {
	if s.Dir == "" {
		return nil
	}
	if err := frontier.Write(s.Dir, s.Frontier); err != nil {
		return err
	}
	return s.saveState("", "")
}

func (s *Search) saveState(event, detail string) error {
	if s.Dir == "" {
		return nil
	}
	b, err := json.MarshalIndent(s.state, "", "  ")
	if err != nil {
		return err
	}
	if err := sweep.WriteFileAtomic(filepath.Join(s.Dir, StateFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if event != "" {
		return s.journal(event, detail)
	}
	return nil
}

// Event is one line of the journal.
type Event struct {
	Time   time.Time `json:"time"`
	Event  string    `json:"event"` // start, resume, plan, render, adopt, collect
	Detail string    `json:"detail,omitempty"`
}

func (s *Search) journal(event, detail string) error {
	if s.Dir == "" {
		return nil
	}
	return Journal(s.Dir, event, detail)
}

// Journal appends an event to dir's journal, one write of one line.
func Journal(dir, event, detail string) error {
	b, err := json.Marshal(Event{Time: time.Now().UTC(), Event: event, Detail: detail})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, JournalFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
