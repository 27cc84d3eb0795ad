// Package history is the history store: the runs of the test plan and its
// notes, kept across sweeps. It holds the store's interface and the
// registry of its backends (the embedded bbolt file, history/bolt; the
// PostgreSQL server, history/pg), the selection of runs and cells by
// filters, the test plan's notes, and the copy between stores. Callers
// open a store once and pass it; package testrun holds the runs
// themselves.
package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/testrun"
)

// History is a history store: the runs of the test plan and its notes.
// The embedded bbolt file (package history/bolt) serves one person on one
// machine; a server backend (PostgreSQL, package history/pg) serves a
// team. Every
// command that reads or writes the history works on any of them.
type History interface {
	// Put stores run whole or not at all, replacing an earlier run of the
	// same sweep; the notes kept for the sweep stay (run.Notes is not
	// stored).
	Put(run *testrun.Run) error
	// PutEncoded is Put of a run already encoded as results.json holds it
	// (without notes), the bytes stored as they are.
	PutEncoded(run *testrun.Run, doc []byte) error
	// Get returns the run of a sweep id with its notes, or nil.
	Get(id string) (*testrun.Run, error)
	// Runs returns every stored run with its notes, oldest first (by
	// start, then collection), as one consistent snapshot.
	Runs() ([]*testrun.Run, error)
	// Query returns the runs q selects, as Apply over Runs would, oldest
	// first: answered by the store from its index or tables, not by
	// reading every run.
	Query(q Query) ([]*testrun.Run, error)
	// Count is the number of stored runs.
	Count() (int, error)
	// AddNote stores n after the notes already kept for its sweep.
	AddNote(n testrun.Note) error
	// Forget removes the run of the sweep rm.Sweep, its cells and index
	// entries, and records rm completed with the run's spec, ref, date
	// and cells (Removal.Of), in one transaction; the sweep's notes
	// stay. ok is false, and nothing is recorded, when the store holds
	// no such run.
	Forget(id string, rm Removal) (done Removal, ok bool, err error)
	// Removals returns the removals recorded, oldest first.
	Removals() ([]Removal, error)
	// String is where the store is, as messages name it: a path, or a
	// URL without its password.
	String() string
	Close() error
}

// A Backend opens the history store at loc, a URL of its scheme.
// readOnly opens never create or change anything.
type Backend func(loc string, readOnly bool) (History, error)

var (
	backendsMu sync.Mutex
	backends   = map[string]Backend{}
)

// RegisterBackend makes Open open URLs of the schemes with open. The
// scheme "" is the backend of plain paths (a bbolt file): package
// history/bolt registers itself so when it is imported.
func RegisterBackend(open Backend, schemes ...string) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	for _, s := range schemes {
		backends[s] = open
	}
}

// IsURL reports whether loc names a history store by URL (SCHEME://...)
// rather than a bbolt file's path.
func IsURL(loc string) bool {
	scheme, _, ok := strings.Cut(loc, "://")
	return ok && scheme != "" && !strings.ContainsAny(scheme, "/.")
}

// Open opens the history store at loc: a URL of a registered backend
// (postgres://...), else the path of a bbolt file (the backend of the
// scheme "").
func Open(loc string, readOnly bool) (History, error) {
	scheme := ""
	if IsURL(loc) {
		scheme, _, _ = strings.Cut(loc, "://")
	}
	backendsMu.Lock()
	open := backends[scheme]
	backendsMu.Unlock()
	if open == nil && scheme == "" {
		return nil, fmt.Errorf("history store %s: this kvsweep has no backend for a store file (import history/bolt)", loc)
	}
	if open == nil {
		return nil, fmt.Errorf("history store %s: this kvsweep has no %s:// backend (a -tags lite build has only the bbolt file; postgres:// needs the full build)", Redact(loc), scheme)
	}
	return open(loc, readOnly)
}

// Redact is loc with any password removed: a URL's user password, and a
// password= query parameter. Messages name a store only this way.
func Redact(loc string) string {
	if !IsURL(loc) {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		// Unparsable: keep the scheme and host only.
		scheme, rest, _ := strings.Cut(loc, "://")
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			rest = rest[i+1:]
		}
		if i := strings.IndexAny(rest, "/?"); i >= 0 {
			rest = rest[:i]
		}
		return scheme + "://" + rest
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if q := u.Query(); q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// ContentHash is the SHA-256 of a run as stored and its notes: two stores
// that hold the same run give the same hash.
func ContentHash(run *testrun.Run) (string, error) {
	h := sha256.New()
	cp := *run
	cp.Notes = nil
	b, err := testrun.EncodeRun(&cp)
	if err != nil {
		return "", err
	}
	// The hash is of the bytes results.json holds: the run and a newline.
	h.Write(b)
	h.Write([]byte{'\n'})
	for _, n := range run.Notes {
		nb, err := json.Marshal(n)
		if err != nil {
			return "", err
		}
		h.Write(nb)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// DefaultStorePath is $KVSWEEP_STORE, else ~/.local/share/kvsweep/history.db.
func DefaultStorePath() string {
	if p := os.Getenv("KVSWEEP_STORE"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "kvsweep-history.db"
	}
	return filepath.Join(home, ".local", "share", "kvsweep", "history.db")
}
