package pg

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/testrun"
)

// snapshot runs f in a read-only transaction that sees one moment of the
// store: a run being replaced is seen before or after, never half-way.
func (s *Store) snapshot(what string, f func(context.Context, pgx.Tx) error) error {
	return s.do(what, func(ctx context.Context, c *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			return f(ctx, tx)
		})
	})
}

// Get returns the run of a sweep id with its notes, or nil.
func (s *Store) Get(id string) (*testrun.Run, error) {
	if s.empty {
		return nil, nil
	}
	var run *testrun.Run
	err := s.snapshot("reading run "+id, func(ctx context.Context, tx pgx.Tx) error {
		run = nil
		var doc []byte
		err := tx.QueryRow(ctx, `SELECT doc FROM kvsweep.runs WHERE id = $1`, id).Scan(&doc)
		if err == pgx.ErrNoRows {
			return nil
		} else if err != nil {
			return err
		}
		if run, err = testrun.DecodeRun(doc); err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		notes, err := s.notes(ctx, tx, `WHERE sweep = $1`, id)
		run.Notes = notes[id]
		return err
	})
	return run, err
}

// Runs returns every stored run with its notes, oldest first.
func (s *Store) Runs() ([]*testrun.Run, error) {
	if s.empty {
		return nil, nil
	}
	var runs []*testrun.Run
	err := s.snapshot("reading the runs", func(ctx context.Context, tx pgx.Tx) error {
		runs = runs[:0]
		rows, err := tx.Query(ctx, `SELECT id, doc FROM kvsweep.runs ORDER BY id`)
		if err != nil {
			return err
		}
		var id string
		var doc []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &doc}, func() error {
			r, err := testrun.DecodeRun(doc)
			if err != nil {
				return fmt.Errorf("run %s: %w", id, err)
			}
			runs = append(runs, r)
			return nil
		})
		if err != nil {
			return err
		}
		notes, err := s.notes(ctx, tx, "")
		for _, r := range runs {
			r.Notes = notes[r.ID]
		}
		return err
	})
	testrun.SortRuns(runs)
	return runs, err
}

// notes reads the notes (of the sweeps where selects), in the order they
// were written, by sweep.
func (s *Store) notes(ctx context.Context, tx pgx.Tx, where string, args ...any) (map[string][]testrun.Note, error) {
	rows, err := tx.Query(ctx, `SELECT id, doc FROM kvsweep.notes `+where+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	out := map[string][]testrun.Note{}
	var id int64
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &doc}, func() error {
		var n testrun.Note
		if err := json.Unmarshal(doc, &n); err != nil {
			return fmt.Errorf("note %d: %w", id, err)
		}
		out[n.Sweep] = append(out[n.Sweep], n)
		return nil
	})
	return out, err
}

// Query returns the runs q selects, oldest first: the runs SQL over the
// tables selects (indexed, migrations/0002_queries.sql), decoded and held
// to q (history.Apply), which narrows their cells. The SQL may select a
// run q does not (a time compared to the microsecond), never the reverse.
func (s *Store) Query(q history.Query) ([]*testrun.Run, error) {
	if s.empty {
		return nil, nil
	}
	where, args := sqlWhere(q)
	var runs []*testrun.Run
	err := s.snapshot("querying the runs", func(ctx context.Context, tx pgx.Tx) error {
		runs = runs[:0]
		rows, err := tx.Query(ctx, `SELECT id, doc FROM kvsweep.runs r WHERE `+where+` ORDER BY id`, args...)
		if err != nil {
			return err
		}
		var id string
		var doc []byte
		var ids []string
		_, err = pgx.ForEachRow(rows, []any{&id, &doc}, func() error {
			r, err := testrun.DecodeRun(doc)
			if err != nil {
				return fmt.Errorf("run %s: %w", id, err)
			}
			runs, ids = append(runs, r), append(ids, id)
			return nil
		})
		if err != nil || len(runs) == 0 {
			return err
		}
		notes, err := s.notes(ctx, tx, `WHERE sweep = ANY($1)`, ids)
		for _, r := range runs {
			r.Notes = notes[r.ID]
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	testrun.SortRuns(runs)
	return history.Apply(runs, q), nil
}

// Count is the number of stored runs.
func (s *Store) Count() (int, error) {
	if s.empty {
		return 0, nil
	}
	var n int
	err := s.snapshot("counting the runs", func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM kvsweep.runs`).Scan(&n)
	})
	return n, err
}
