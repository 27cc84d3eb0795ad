// Package pg is the history store on PostgreSQL: the store a team
// shares (several CI runners, people's login nodes), beside the embedded
// bbolt file, behind the same history.History.
//
// A run is stored whole or not at all: one transaction replaces a sweep's
// run (its notes stay), serialised per sweep by an advisory lock, so
// concurrent collects from several runners never lose or mix a run, and a
// reader, in a snapshot of its own, never sees half of one. Besides the
// run's document (what kvsweep reads back, the bytes of results.json)
// the transaction lays the run out in tables and views people query
// (migrations/, docs/history-store.md). Transient errors (the server
// restarting, a connection lost, a deadlock or serialisation failure) are
// retried with backoff until a deadline; a password, in the URL or in
// $PGPASSWORD, is never part of a message.
package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kvsweep/kvsweep/history"
)

// Schemes are the URL schemes of the store.
var Schemes = []string{"postgres", "postgresql"}

// Deadline bounds the retries of one operation; $KVSWEEP_STORE_RETRY
// (a Go duration) sets it.
var Deadline = 2 * time.Minute

// Log receives one line per retry.
var Log io.Writer = os.Stderr

// Store is a history store in a PostgreSQL database.
type Store struct {
	cfg      *pgx.ConnConfig
	where    string // the URL without its password
	secrets  []string
	conn     *pgx.Conn
	readOnly bool
	// empty: the database has no kvsweep tables (a reader's view of a
	// store nobody collected into yet).
	empty bool
}

var _ history.History = (*Store)(nil)

// Open opens the store at the URL loc (libpq's: sslmode and the other
// settings pass through, $PGPASSWORD and ~/.pgpass are read). A writer
// creates kvsweep's tables in a database that has none; a database whose
// schema is older or newer than this kvsweep's is refused with what to do.
func Open(loc string, readOnly bool) (history.History, error) {
	s, err := connect(loc, readOnly)
	if err != nil {
		return nil, err
	}
	if err := s.checkSchema(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func connect(loc string, readOnly bool) (*Store, error) {
	where := history.Redact(loc)
	cfg, err := pgx.ParseConfig(loc)
	if err != nil {
		return nil, fmt.Errorf("history store %s: %s", where, scrub(err.Error(), passwordOf(loc)))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 15 * time.Second
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = "kvsweep"
	if readOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	s := &Store{cfg: cfg, where: where, readOnly: readOnly, secrets: []string{cfg.Password, passwordOf(loc), os.Getenv("PGPASSWORD")}}
	if err := s.do("connecting", func(context.Context, *pgx.Conn) error { return nil }); err != nil {
		return nil, err
	}
	return s, nil
}

// passwordOf is the password of a URL, if any.
func passwordOf(loc string) string {
	if _, rest, ok := strings.Cut(loc, "://"); ok {
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
				return pw
			}
		}
	}
	return ""
}

// scrub removes the secrets from a message.
func scrub(msg string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}

// String is the store's URL without its password.
func (s *Store) String() string { return s.where }

// Close closes the connection.
func (s *Store) Close() error {
	if s.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.conn.Close(ctx)
	s.conn = nil
	return err
}

// do runs f on a connection (made or made again as needed), retrying
// transient errors with backoff (1 s, 2 s, 4 s ... 30 s) until Deadline.
// f must be safe to run again: a transaction that failed was rolled back.
func (s *Store) do(what string, f func(context.Context, *pgx.Conn) error) error {
	deadline := Deadline
	if d, err := time.ParseDuration(os.Getenv("KVSWEEP_STORE_RETRY")); err == nil && d >= 0 {
		deadline = d
	}
	end := time.Now().Add(deadline)
	wait := time.Second
	for try := 1; ; try++ {
		err := s.attempt(f)
		if err == nil {
			return nil
		}
		msg := scrub(err.Error(), s.secrets...)
		if !transient(err) {
			return fmt.Errorf("history store %s: %s: %s", s.where, what, msg)
		}
		if time.Now().Add(wait).After(end) {
			return fmt.Errorf("history store %s: %s: %s (still failing after %d tries over %s; $KVSWEEP_STORE_RETRY sets how long to keep trying)", s.where, what, msg, try, deadline)
		}
		fmt.Fprintf(Log, "kvsweep: history store %s: %s: %s; retrying in %s\n", s.where, what, msg, wait)
		time.Sleep(wait)
		wait = min(wait*2, 30*time.Second)
	}
}

// attempt runs f once, connecting first if there is no live connection;
// a connection an error may have broken is dropped.
func (s *Store) attempt(f func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if s.conn == nil || s.conn.IsClosed() {
		c, err := pgx.ConnectConfig(ctx, s.cfg)
		if err != nil {
			return err
		}
		s.conn = c
	}
	err := f(ctx, s.conn)
	if err != nil && transient(err) {
		_ = s.Close()
	}
	return err
}

// transient reports whether an error may go away by itself: the server
// starting or shutting down, a connection refused or lost, too many
// connections, a deadlock or serialisation failure. A wrong password, a
// missing database or a refused statement is not.
func transient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "57P01", "57P02", "57P03", "53300", "53400":
			return true
		}
		return strings.HasPrefix(pe.Code, "08")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Importing the package makes history.Open open postgres:// URLs.
func init() { history.RegisterBackend(Open, Schemes...) }
