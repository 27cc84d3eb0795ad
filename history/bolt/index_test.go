package bolt

import (
	"path/filepath"
	"slices"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/testing/runtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/testrun"
)

// A store written before the index existed is queried by reading every
// run while it is opened read-only, and gets its index when it is opened
// for writing; both answers are the same.
func TestIndexBuiltOnWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	st, err := Open(path, false)
	sweeptest.Must(t, err)
	for _, name := range []string{"base", "cand", "mixed"} {
		sweeptest.Must(t, st.Put(runtest.Collected(t, name)))
	}
	// As a kvsweep before the index left it.
	sweeptest.Must(t, st.update(func(tx *bbolt.Tx) error {
		sweeptest.Must(t, tx.DeleteBucket(indexBucket))
		return tx.DeleteBucket(indexKeysBucket)
	}))
	sweeptest.Must(t, st.Close())
	q := history.Query{Filters: []history.Filter{{Key: "engine", Value: "vllm"}}}
	ids := func(readOnly bool) []string {
		st, err := Open(path, readOnly)
		sweeptest.Must(t, err)
		defer st.Close()
		indexed := false
		sweeptest.Must(t, st.view(func(tx *bbolt.Tx) error { indexed = tx.Bucket(indexBucket) != nil; return nil }))
		if indexed == readOnly {
			t.Errorf("opened read-only %v: index there %v", readOnly, indexed)
		}
		runs, err := st.Query(q)
		sweeptest.Must(t, err)
		return runIDs(runs)
	}
	before, after := ids(true), ids(false)
	if len(before) == 0 || !slices.Equal(before, after) {
		t.Errorf("without the index %v, with it %v", before, after)
	}
}

func runIDs(runs []*testrun.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}
