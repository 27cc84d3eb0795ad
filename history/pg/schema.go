package pg

import (
	"context"
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Kvsweep is this kvsweep's version, recorded with each migration applied.
var Kvsweep = "devel"

// The schema's versions: migrations/NNNN_*.sql, applied in order, each
// in one transaction with its row in kvsweep.schema_migrations.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() []migration {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, e := range entries {
		v, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			panic("migration without a version: " + e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out
}

// Version is the schema version this kvsweep reads and writes.
func Version() int {
	m := migrations()
	return m[len(m)-1].version
}

// migrateLock is the advisory lock migrations hold: two kvsweeps that find
// an empty database at once create the tables once.
const migrateLock = 0x6b7673776565 // "kvswee"

// Version is the schema version of the database: 0 when it has no
// kvsweep tables; with the kvsweep that applied it.
func (s *Store) version(ctx context.Context, c *pgx.Conn) (int, string, error) {
	var exists bool
	if err := c.QueryRow(ctx, `SELECT to_regclass('kvsweep.schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0, "", err
	}
	var v int
	var by string
	err := c.QueryRow(ctx, `SELECT version, kvsweep_version FROM kvsweep.schema_migrations ORDER BY version DESC LIMIT 1`).Scan(&v, &by)
	if err == pgx.ErrNoRows {
		return 0, "", nil
	}
	return v, by, err
}

// checkSchema refuses a database whose schema is not this kvsweep's, and
// creates the tables in an empty one for a writer.
func (s *Store) checkSchema() error {
	var v int
	var by string
	if err := s.do("reading the schema version", func(ctx context.Context, c *pgx.Conn) (err error) {
		v, by, err = s.version(ctx, c)
		return err
	}); err != nil {
		return err
	}
	want := Version()
	switch {
	case v == 0 && s.readOnly:
		s.empty = true
		return nil
	case v == 0:
		_, _, err := s.migrate()
		return err
	case v > want:
		return fmt.Errorf("history store %s has schema version %d (written by kvsweep %s), newer than this kvsweep's %d: use a kvsweep as new as that one", s.where, v, by, want)
	case v < want:
		return fmt.Errorf("history store %s has schema version %d, older than this kvsweep's %d: run kvsweep store migrate --store %s (kvsweeps older than this one then refuse the store)", s.where, v, want, s.where)
	}
	return nil
}

// Migrate brings the schema of the database at loc to this kvsweep's
// version, creating it in an empty database; it returns the versions
// before and after. A database newer than this kvsweep is refused.
func Migrate(loc string) (from, to int, err error) {
	s, err := connect(loc, false)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	return s.migrate()
}

func (s *Store) migrate() (from, to int, err error) {
	err = s.do("migrating the schema", func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		defer c.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLock)) //nolint:errcheck // a lost connection releases it too
		v, by, err := s.version(ctx, c)
		if err != nil {
			return err
		}
		from, to = v, v
		if v > Version() {
			return fmt.Errorf("schema version %d (written by kvsweep %s) is newer than this kvsweep's %d: use a kvsweep as new as that one", v, by, Version())
		}
		for _, m := range migrations() {
			if m.version <= v {
				continue
			}
			if err := apply(ctx, c, m); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			to = m.version
		}
		return nil
	})
	return from, to, err
}

func apply(ctx context.Context, c *pgx.Conn, m migration) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS kvsweep;
CREATE TABLE IF NOT EXISTS kvsweep.schema_migrations (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now(),
    kvsweep_version text NOT NULL
)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO kvsweep.schema_migrations (version, kvsweep_version) VALUES ($1, $2)`, m.version, Kvsweep); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
