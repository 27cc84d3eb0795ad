package testrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// History is a history store: the runs of the test plan and its notes.
// The embedded bbolt file (BoltStore) serves one person on one machine; a
// server backend (PostgreSQL, package pgstore) serves a team. Every
// command that reads or writes the history works on any of them.
type History interface {
	// Put stores run whole or not at all, replacing an earlier run of the
	// same sweep; the notes kept for the sweep stay (run.Notes is not
	// stored).
	Put(run *Run) error
	// PutEncoded is Put of a run already encoded as results.json holds it
	// (without notes), the bytes stored as they are.
	PutEncoded(run *Run, doc []byte) error
	// Get returns the run of a sweep id with its notes, or nil.
	Get(id string) (*Run, error)
	// Runs returns every stored run with its notes, oldest first (by
	// start, then collection), as one consistent snapshot.
	Runs() ([]*Run, error)
	// AddNote stores n after the notes already kept for its sweep.
	AddNote(n Note) error
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

// RegisterBackend makes OpenHistory open URLs of the schemes with open.
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

// OpenHistory opens the history store at loc: a URL of a registered
// backend (postgres://...), else the path of a bbolt file (OpenStore).
func OpenHistory(loc string, readOnly bool) (History, error) {
	if !IsURL(loc) {
		return OpenStore(loc, readOnly)
	}
	scheme, _, _ := strings.Cut(loc, "://")
	backendsMu.Lock()
	open := backends[scheme]
	backendsMu.Unlock()
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
func ContentHash(run *Run) (string, error) {
	h := sha256.New()
	cp := *run
	cp.Notes = nil
	var b bytes.Buffer
	if err := encodeRun(&b, &cp); err != nil {
		return "", err
	}
	h.Write(b.Bytes())
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

// EncodeRun is the run as results.json and the history store hold it,
// without its notes (json.Marshal's bytes, no newline).
func EncodeRun(run *Run) ([]byte, error) {
	cp := *run
	cp.Notes = nil
	var b bytes.Buffer
	if err := encodeRun(&b, &cp); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// DecodeRun decodes a run EncodeRun encoded.
func DecodeRun(b []byte) (*Run, error) { return decodeRun(b) }

// SortRuns orders runs oldest first, as Runs returns them.
func SortRuns(runs []*Run) { sortRuns(runs) }
