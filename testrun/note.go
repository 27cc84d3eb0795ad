package testrun

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
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
