package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/testrun"
)

// What CollectDir gives alongside is the run it writes: a report made
// from it while results.json and the store are written (under -race in
// CI) is byte for byte the report of the run read back, in every format.
// A failed write keeps nothing of it: CollectDir returns the error.
func TestCollectDirAlongside(t *testing.T) {
	for _, format := range []Format{"markdown", "table", "csv", "json", "junit", "html"} {
		t.Run(string(format), func(t *testing.T) {
			dir := sweeptest.Copy(t, "mixed")
			store := filepath.Join(t.TempDir(), "history.db")
			var made bytes.Buffer
			var madeErr error
			calls := 0
			run, err := history.CollectDir(dir, testrun.CollectOptions{}, store, func(r *testrun.Run) {
				calls++
				madeErr = WriteRuns(&made, format, []*testrun.Run{r}, false, dir)
			})
			if err != nil || madeErr != nil {
				t.Fatalf("CollectDir: %v; the report alongside: %v", err, madeErr)
			}
			if calls != 1 {
				t.Fatalf("alongside ran %d times, want once", calls)
			}
			back, err := testrun.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := WriteRuns(&want, format, []*testrun.Run{back}, false, dir); err != nil {
				t.Fatal(err)
			}
			if made.String() != want.String() {
				t.Errorf("the report made alongside differs from the one of results.json read back:\n%s\n---\n%s", made.String(), want.String())
			}
			if len(run.Cells) == 0 || made.Len() == 0 {
				t.Fatalf("nothing collected (%d cells) or reported (%d bytes)", len(run.Cells), made.Len())
			}
		})
	}
	t.Run("write fails", func(t *testing.T) {
		dir := sweeptest.Copy(t, "mixed")
		// The store cannot be opened (its directory is a file): the run
		// is not stored, and CollectDir says so after alongside is done.
		notDir := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(notDir, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		done := false
		_, err := history.CollectDir(dir, testrun.CollectOptions{}, filepath.Join(notDir, "history.db"), func(*testrun.Run) { done = true })
		if err == nil {
			t.Fatal("CollectDir stored into a store under a file")
		}
		if !done {
			t.Error("CollectDir returned before alongside was done")
		}
	})
}
