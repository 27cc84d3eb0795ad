package testrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
)

// MaxNoteSize is the longest note text accepted, in bytes.
const MaxNoteSize = 16 << 10

// Note is a finding of the test plan kept with the run that found it: the
// sweep, optionally one cell of it, who wrote it and when. Notes live in a
// bucket of their own, so collecting a sweep again keeps them.
type Note struct {
	Sweep  string    `json:"sweep"`
	Cell   string    `json:"cell,omitempty"` // the cell's name; empty for the whole run
	Author string    `json:"author"`
	Time   time.Time `json:"time"`
	Text   string    `json:"text"`
}

// String is the note on one line: "CELL: TEXT (AUTHOR, 2026-12-03 10:04)".
func (n Note) String() string {
	s := strings.Join(strings.Fields(n.Text), " ")
	if n.Cell != "" {
		s = n.Cell + ": " + s
	}
	return fmt.Sprintf("%s (%s, %s)", s, n.Author, n.Time.UTC().Format("2006-01-02 15:04"))
}

// Check refuses a note that cannot be stored: no sweep, no author, an
// empty, oversized or non-UTF-8 text.
func (n Note) Check() error {
	switch {
	case n.Sweep == "":
		return fmt.Errorf("note: no sweep id")
	case strings.TrimSpace(n.Author) == "":
		return fmt.Errorf("note: no author (set $USER or git's user.name, or give --author)")
	case strings.TrimSpace(n.Text) == "":
		return fmt.Errorf("note: the text is empty")
	case len(n.Text) > MaxNoteSize:
		return fmt.Errorf("note: the text is %d bytes (at most %d)", len(n.Text), MaxNoteSize)
	case !utf8.ValidString(n.Text) || !utf8.ValidString(n.Author):
		return fmt.Errorf("note: the text is not UTF-8")
	}
	return nil
}

var notesBucket = []byte("notes")

// AddNote stores n after the notes already kept for its sweep.
func (s *BoltStore) AddNote(n Note) error {
	if err := n.Check(); err != nil {
		return err
	}
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(notesBucket)
		if err != nil {
			return err
		}
		seq, err := bk.NextSequence()
		if err != nil {
			return err
		}
		return bk.Put([]byte(fmt.Sprintf("%s\x00%016x", n.Sweep, seq)), b)
	})
}

// notesOf reads the notes of one sweep, in the order they were written.
func notesOf(tx *bolt.Tx, sweepID string) ([]Note, error) {
	bk := tx.Bucket(notesBucket)
	if bk == nil {
		return nil, nil
	}
	var out []Note
	prefix := []byte(sweepID + "\x00")
	c := bk.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var n Note
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, fmt.Errorf("note %q: %w", k, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// Annotate stores a note on the run sel names — a sweep directory or a
// sweep id in the store at storePath — and, when n.Cell is set, on that
// cell (its id or name; the note keeps the name). The run need not be
// collected yet when sel is a sweep directory.
func Annotate(storePath, sel string, n Note) (Note, error) {
	m, err := sweep.ReadManifest(sel)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, err
	}
	notFound := fail.Usagef("%q is neither a sweep directory nor a run in %s (kvsweep report --history lists them)", sel, Redact(storePath))
	if _, serr := os.Stat(storePath); m == nil && serr != nil && !IsURL(storePath) {
		return n, notFound // no store yet: do not create one for nothing
	}
	st, err := OpenHistory(storePath, false)
	if err != nil {
		return n, err
	}
	defer st.Close()
	cells := map[string]string{} // id and name -> name
	if m != nil {
		n.Sweep = m.SweepID
		for _, c := range m.Cells {
			cells[c.ID], cells[c.Name] = c.Name, c.Name
		}
	} else {
		r, err := st.Get(sel)
		if err != nil {
			return n, err
		}
		if r == nil {
			return n, notFound
		}
		n.Sweep = r.ID
		for _, c := range r.Cells {
			cells[c.CellID], cells[c.Name] = c.Name, c.Name
		}
	}
	if n.Cell != "" {
		name, ok := cells[n.Cell]
		if !ok {
			return n, fail.Usagef("cell %q is not a cell of sweep %s (give its id or name, as kvsweep status lists them)", n.Cell, n.Sweep)
		}
		n.Cell = name
	}
	if err := n.Check(); err != nil {
		return n, fail.Usagef("%v", err)
	}
	return n, st.AddNote(n)
}
