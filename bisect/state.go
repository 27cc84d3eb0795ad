package bisect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// The bisect directory: StateFile (the search: its commits, rounds and
// outcomes, rewritten atomically after each outcome), JournalFile (one
// JSON line per build, reuse and submission a probe made, appended), and
// a directory per probe (ProbesDir/SHORT: the image and the sweep).
const (
	StateFile   = "bisect.json"
	JournalFile = "journal.jsonl"
	ProbesDir   = "probes"
	maxState    = 16 << 20
)

// State is a bisect: what it searches and what it found so far.
type State struct {
	Version int `json:"version"`
	// ID names the bisect's probe sweeps (ID-SHORT).
	ID string `json:"id"`
	// Args are what the bisect was started with (spec, component, good,
	// bad, cells, gates): a bisect started again with others is refused.
	Args map[string]string `json:"args"`
	K    int               `json:"k"`
	// Commits are good..bad, oldest first: the good commit, those
	// between, the bad commit.
	Commits []Commit            `json:"commits"`
	Rounds  [][]string          `json:"rounds"`
	Probes  map[string]*Outcome `json:"probes"`
}

// New is a bisect of commits (good first, bad last).
func New(id string, args map[string]string, k int, commits []Commit) *State {
	return &State{Version: 1, ID: id, Args: args, K: max(k, 1), Commits: commits, Probes: map[string]*Outcome{}}
}

// Load reads the bisect in dir; nil when there is none yet.
func Load(dir string) (*State, error) {
	b, err := sweep.ReadFile(dir, StateFile, maxState)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, StateFile), err)
	}
	if s.Version != 1 || len(s.Commits) < 2 || s.K < 1 {
		return nil, fmt.Errorf("%s: not a bisect kvsweep can go on with (version %d, %d commits)", filepath.Join(dir, StateFile), s.Version, len(s.Commits))
	}
	if s.Probes == nil {
		s.Probes = map[string]*Outcome{}
	}
	return &s, nil
}

// Check refuses to go on with a bisect started with other arguments.
func (s *State) Check(dir string, args map[string]string) error {
	for k, v := range args {
		if s.Args[k] != v {
			return fmt.Errorf("%s holds a bisect started with --%s %q, not %q: go on with the same arguments, or give another --out", dir, k, s.Args[k], v)
		}
	}
	return nil
}

// Save writes the state atomically.
func (s *State) Save(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return sweep.WriteFileAtomic(filepath.Join(dir, StateFile), append(b, '\n'), 0o644)
}

func (s *State) commit(sha string) Commit {
	for _, c := range s.Commits {
		if c.SHA == sha {
			return c
		}
	}
	return Commit{SHA: sha}
}

// Event is one line of the journal.
type Event struct {
	Time   time.Time `json:"time"`
	Event  string    `json:"event"` // build, reuse, render, submit, collect
	Commit string    `json:"commit"`
	Detail string    `json:"detail,omitempty"`
}

// Journal appends an event to dir's journal (one write of one line, so
// that probes writing at once never interleave).
func Journal(dir, event, commit, detail string) error {
	b, err := json.Marshal(Event{Time: time.Now().UTC(), Event: event, Commit: commit, Detail: detail})
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

// ReadJournal reads dir's journal.
func ReadJournal(dir string) ([]Event, error) {
	b, err := sweep.ReadFile(dir, JournalFile, 64<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var out []Event
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			continue // a line cut short by a kill
		}
		out = append(out, e)
	}
	return out, nil
}
