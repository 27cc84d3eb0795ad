package pg

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/testing/pgtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/testrun"
)

// A store of schema version 1 migrated to this kvsweep's version has its cells' earlier
// attempts filled from the runs' documents: the bad-node ledger's query
// finds a run whose only failure outside the test was a retried attempt.
func TestMigrationFillsEarlier(t *testing.T) {
	loc := pgtest.DB(t)
	st, err := Open(loc, false)
	sweeptest.Must(t, err)
	run := &testrun.Run{ID: "retried-1", Name: "retried", CollectedAt: sweeptest.Now, Cells: []testrun.CellResult{{
		CellID: "000000000001", Name: "cell-1", Outcome: testrun.OK, Attempts: 2,
		Earlier: []testrun.Attempt{{State: "NODE_FAIL", Nodes: "n3", Class: testrun.ClassInfra}}}}}
	sweeptest.Must(t, st.Put(run))
	sweeptest.Must(t, st.Close())
	// The store as schema version 1 had it.
	ctx := context.Background()
	c, err := pgx.Connect(ctx, loc)
	sweeptest.Must(t, err)
	defer c.Close(ctx)
	_, err = c.Exec(ctx, `ALTER TABLE kvsweep.cells DROP COLUMN earlier;
DROP INDEX kvsweep.cells_params, kvsweep.cells_image_ref, kvsweep.runs_name_ref_collected, kvsweep.runs_collected;
DROP TABLE kvsweep.removals;
DELETE FROM kvsweep.schema_migrations WHERE version >= 2`)
	sweeptest.Must(t, err)
	if from, to, err := Migrate(loc); err != nil || from != 1 || to != Version() {
		t.Fatalf("Migrate of version 1: %d -> %d, %v", from, to, err)
	}
	h, err := Open(loc, true)
	sweeptest.Must(t, err)
	defer h.Close()
	runs, err := h.Query(history.Query{InfraFailures: true})
	sweeptest.Must(t, err)
	if len(runs) != 1 || runs[0].ID != "retried-1" {
		t.Errorf("the ledger's runs after the migration: %d, want retried-1", len(runs))
	}
}
