package history

import (
	"errors"
	"os"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// Annotate stores a note on the run sel names — a sweep directory or a
// sweep id in the store h — and, when n.Cell is set, on that
// cell (its id or name; the note keeps the name). The run need not be
// collected yet when sel is a sweep directory.
func Annotate(h History, sel string, n testrun.Note) (testrun.Note, error) {
	m, err := sweep.ReadManifest(sel)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, err
	}
	notFound := fail.Usagef("%q is neither a sweep directory nor a run in %s (kvsweep report --history lists them)", sel, h)
	if l, ok := h.(*Lazy); ok && m == nil && l.st == nil && !IsURL(l.loc) {
		if _, err := os.Stat(l.loc); err != nil {
			return n, notFound // no store yet: do not create one for nothing
		}
	}
	if err := Opened(h); err != nil {
		return n, err
	}
	st := h
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
