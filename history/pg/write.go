package pg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kvsweep/kvsweep/testrun"
)

var errReadOnly = errors.New("opened read-only")

// Put stores run, replacing an earlier run of the same sweep.
func (s *Store) Put(run *testrun.Run) error {
	doc, err := testrun.EncodeRun(run)
	if err != nil {
		return err
	}
	return s.PutEncoded(run, doc)
}

// PutEncoded stores run, encoded as doc, in one transaction: the run's
// row and document, its cells, cases and metrics, the images its cells
// ran. The sweep's earlier run goes in the same transaction; its notes
// stay. Writers of one sweep take turns (an advisory lock on its id).
func (s *Store) PutEncoded(run *testrun.Run, doc []byte) error {
	if s.readOnly {
		return errReadOnly
	}
	rows := layOut(run)
	sum := sha256.Sum256(doc)
	started := timestamp(run.Started)
	return s.do("storing run "+run.ID, func(ctx context.Context, c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "kvsweep.run:"+run.ID)
			for _, table := range []string{"metrics", "cases", "cells"} {
				b.Queue(`DELETE FROM kvsweep.`+table+` WHERE run_id = $1`, run.ID)
			}
			b.Queue(`DELETE FROM kvsweep.runs WHERE id = $1`, run.ID)
			b.Queue(`INSERT INTO kvsweep.runs (id, name, ref, kvsweep_version, started, collected_at, run_date, cells, cells_ok, content_sha256, doc)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				run.ID, run.Name, run.Ref, run.Version, started, run.CollectedAt, run.Date(), len(run.Cells), run.Counts()[testrun.OK], hex.EncodeToString(sum[:]), doc)
			for _, im := range rows.images {
				b.Queue(`INSERT INTO kvsweep.images (digest, ref, source_revisions) VALUES ($1, $2, $3) ON CONFLICT (digest) DO NOTHING`, im[0], im[1], im[2])
			}
			for _, ic := range rows.components {
				b.Queue(`INSERT INTO kvsweep.image_components (digest, component, repo, ref, commit, dirty) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, ic...)
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			for _, t := range []struct {
				table string
				cols  []string
				rows  [][]any
			}{
				{"cells", cellCols, rows.cells},
				{"cases", caseCols, rows.cases},
				{"metrics", metricCols, rows.metrics},
			} {
				if _, err := tx.CopyFrom(ctx, pgx.Identifier{"kvsweep", t.table}, t.cols, pgx.CopyFromRows(t.rows)); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

var (
	cellCols   = []string{"run_id", "cell_no", "cell_id", "name", "params", "outcome", "class", "state", "exit_code", "image_ref", "image_digest", "commits", "nodes", "cluster", "started", "attempts", "hardware", "earlier"}
	caseCols   = []string{"run_id", "cell_no", "case_no", "case_id", "verdict", "duration_s", "message"}
	metricCols = []string{"run_id", "cell_no", "case_no", "metric", "value", "unit", "direction"}
)

// tables is a run laid out as the rows of the query tables.
type tables struct {
	cells, cases, metrics [][]any
	images                [][3]any // digest, ref, source_revisions: sorted by digest
	components            [][]any  // sorted by digest, then component
}

// layOut lays a run out in rows. Images are sorted so that concurrent
// writers insert shared rows in one order (no deadlock between them).
func layOut(run *testrun.Run) tables {
	var t tables
	images := map[string][3]any{}
	components := map[[2]string][]any{}
	for i, c := range run.Cells {
		commits := map[string]string{}
		if sr := c.Image.SourceRevisions; sr != nil {
			for name, comp := range sr.Components {
				commits[name] = comp.Commit
				if c.Image.Digest != "" {
					components[[2]string{c.Image.Digest, name}] = []any{c.Image.Digest, name, comp.Repo, comp.Ref, comp.Commit, comp.Dirty}
				}
			}
		}
		if d := c.Image.Digest; d != "" {
			if _, ok := images[d]; !ok {
				var sr []byte
				if c.Image.SourceRevisions != nil {
					sr, _ = json.Marshal(c.Image.SourceRevisions)
				}
				images[d] = [3]any{d, c.Image.Ref, sr}
			}
		}
		params := c.Params
		if params == nil {
			params = map[string]string{}
		}
		var hw any
		if c.Hardware != nil {
			hw = c.Hardware
		}
		earlier := c.Earlier
		if earlier == nil {
			earlier = []testrun.Attempt{}
		}
		t.cells = append(t.cells, []any{run.ID, i, c.CellID, c.Name, params, c.Outcome, c.Class, c.State, c.ExitCode,
			c.Image.Ref, c.Image.Digest, commits, c.Nodes, c.Cluster, timestamp(c.Started), c.Attempts, hw, earlier})
		for k, cs := range c.Cases {
			t.cases = append(t.cases, []any{run.ID, i, k, cs.ID, cs.Verdict, cs.DurationS, cs.Message})
			seen := map[string]bool{}
			for _, m := range cs.Metrics {
				if seen[m.Name] {
					continue // a name twice: the first, as the reports read it
				}
				seen[m.Name] = true
				t.metrics = append(t.metrics, []any{run.ID, i, k, m.Name, m.Value, m.Unit, m.Direction})
			}
		}
	}
	for _, im := range images {
		t.images = append(t.images, im)
	}
	sort.Slice(t.images, func(i, j int) bool { return t.images[i][0].(string) < t.images[j][0].(string) })
	keys := make([][2]string, 0, len(components))
	for k := range components {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		t.components = append(t.components, components[k])
	}
	return t
}

// timestamp parses an RFC 3339 time; nil (NULL) when it is not one.
func timestamp(s string) any {
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return nil
}

// AddNote stores n after the notes kept for its sweep; the same note
// (every field equal) is stored once.
func (s *Store) AddNote(n testrun.Note) error {
	if s.readOnly {
		return errReadOnly
	}
	if err := n.Check(); err != nil {
		return err
	}
	doc, err := json.Marshal(n)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(doc)
	return s.do("storing a note on "+n.Sweep, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO kvsweep.notes (sweep, cell, author, time, text, sha256, doc) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (sweep, sha256) DO NOTHING`, n.Sweep, n.Cell, n.Author, n.Time, n.Text, hex.EncodeToString(sum[:]), doc)
		return err
	})
}
