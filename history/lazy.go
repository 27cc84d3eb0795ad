package history

import (
	"errors"
	"os"

	"github.com/kvsweep/kvsweep/testrun"
)

// Lazy is the store at a location, opened when first used: a command
// makes one and passes it to whatever reads or writes the history, so the
// store is opened once, and not at all by a command that only reads sweep
// directories (a store that does not exist yet, or a server out of
// reach, then fails nothing). An open that failed fails every use, with
// the open's error.
type Lazy struct {
	loc      string
	readOnly bool
	st       History
	err      error
}

// OpenLazy is the store at loc, opened on first use (read-only, or for
// writing).
func OpenLazy(loc string, readOnly bool) *Lazy { return &Lazy{loc: loc, readOnly: readOnly} }

// Opened opens the store if it is not open yet, and says whether that
// failed.
func (l *Lazy) Opened() error {
	if l.st == nil && l.err == nil {
		l.st, l.err = Open(l.loc, l.readOnly)
	}
	return l.err
}

// Missing reports whether the store is a file that does not exist yet (a
// database without kvsweep's tables is an empty store instead).
func (l *Lazy) Missing() bool {
	_, err := os.Stat(l.loc)
	return l.st == nil && !IsURL(l.loc) && errors.Is(err, os.ErrNotExist)
}

// Opened opens h if it is a Lazy store not open yet, and says whether
// that failed; any other store is open.
func Opened(h History) error {
	if l, ok := h.(*Lazy); ok {
		return l.Opened()
	}
	return nil
}

// Missing reports whether h is a Lazy store whose file does not exist
// yet: the store of a machine nothing was collected on, which readers
// take as empty.
func Missing(h History) bool {
	l, ok := h.(*Lazy)
	return ok && l.Missing()
}

// Put stores run (see History).
func (l *Lazy) Put(run *testrun.Run) error {
	if err := l.Opened(); err != nil {
		return err
	}
	return l.st.Put(run)
}

// PutEncoded stores an encoded run (see History).
func (l *Lazy) PutEncoded(run *testrun.Run, doc []byte) error {
	if err := l.Opened(); err != nil {
		return err
	}
	return l.st.PutEncoded(run, doc)
}

// Get returns the run of a sweep id (see History).
func (l *Lazy) Get(id string) (*testrun.Run, error) {
	if err := l.Opened(); err != nil {
		return nil, err
	}
	return l.st.Get(id)
}

// Runs returns every stored run (see History).
func (l *Lazy) Runs() ([]*testrun.Run, error) {
	if err := l.Opened(); err != nil {
		return nil, err
	}
	return l.st.Runs()
}

// Query returns the runs q selects (see History).
func (l *Lazy) Query(q Query) ([]*testrun.Run, error) {
	if err := l.Opened(); err != nil {
		return nil, err
	}
	return l.st.Query(q)
}

// Count is the number of stored runs (see History).
func (l *Lazy) Count() (int, error) {
	if err := l.Opened(); err != nil {
		return 0, err
	}
	return l.st.Count()
}

// AddNote stores a note (see History).
func (l *Lazy) AddNote(n testrun.Note) error {
	if err := l.Opened(); err != nil {
		return err
	}
	return l.st.AddNote(n)
}

// Forget removes a run, recording why (see History).
func (l *Lazy) Forget(id string, rm Removal) (Removal, bool, error) {
	if err := l.Opened(); err != nil {
		return rm, false, err
	}
	return l.st.Forget(id, rm)
}

// Removals returns the removals recorded (see History).
func (l *Lazy) Removals() ([]Removal, error) {
	if err := l.Opened(); err != nil {
		return nil, err
	}
	return l.st.Removals()
}

// String is the store's location without a password.
func (l *Lazy) String() string {
	if l.st != nil {
		return l.st.String()
	}
	return Redact(l.loc)
}

// Close closes the store if it was opened.
func (l *Lazy) Close() error {
	if l.st == nil {
		return nil
	}
	return l.st.Close()
}
