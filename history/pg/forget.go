package pg

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kvsweep/kvsweep/history"
)

// Forget removes the run of the sweep id (its row, cells, cases and
// metrics) and records rm, in one transaction, taking the turn of the
// sweep's writers; the sweep's notes and the images stay.
func (s *Store) Forget(id string, rm history.Removal) (history.Removal, bool, error) {
	if s.readOnly {
		return rm, false, errReadOnly
	}
	ok := false
	err := s.do("removing run "+id, func(ctx context.Context, c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			ok = false
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "kvsweep.run:"+id); err != nil {
				return err
			}
			rm.Sweep = id
			err := tx.QueryRow(ctx, `SELECT name, ref, run_date, cells FROM kvsweep.runs WHERE id = $1`, id).Scan(&rm.Name, &rm.Ref, &rm.RunDate, &rm.Cells)
			if err == pgx.ErrNoRows {
				return nil
			} else if err != nil {
				return err
			}
			rm.RunDate = rm.RunDate.UTC()
			if err := rm.Check(); err != nil {
				return err
			}
			doc, err := json.Marshal(rm)
			if err != nil {
				return err
			}
			b := &pgx.Batch{}
			for _, table := range []string{"metrics", "cases", "cells"} {
				b.Queue(`DELETE FROM kvsweep.`+table+` WHERE run_id = $1`, id)
			}
			b.Queue(`DELETE FROM kvsweep.runs WHERE id = $1`, id)
			b.Queue(`INSERT INTO kvsweep.removals (sweep, name, ref, run_date, cells, removed_by, removed_at, reason, doc)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, rm.Sweep, rm.Name, rm.Ref, rm.RunDate, rm.Cells, rm.By, rm.At, rm.Reason, doc)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			ok = true
			return nil
		})
	})
	return rm, ok, err
}

// Removals returns the removals recorded, oldest first.
func (s *Store) Removals() ([]history.Removal, error) {
	if s.empty {
		return nil, nil
	}
	var out []history.Removal
	err := s.snapshot("reading the removals", func(ctx context.Context, tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `SELECT id, doc FROM kvsweep.removals ORDER BY id`)
		if err != nil {
			return err
		}
		var id int64
		var doc []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &doc}, func() error {
			var r history.Removal
			if err := json.Unmarshal(doc, &r); err != nil {
				return fmt.Errorf("removal %d: %w", id, err)
			}
			out = append(out, r)
			return nil
		})
		return err
	})
	return out, err
}
