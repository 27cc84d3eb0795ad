package bolt

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// On a full file system, collect and the history store fail with the
// reason, keep what they had recorded whole (results.json as it was, the
// store's runs readable), and complete once space is freed.
func TestFullDisk(t *testing.T) {
	fs := sweeptest.SmallFS(t, 8<<20)
	dir := filepath.Join(fs, "sweep")
	sweeptest.Must(t, os.CopyFS(dir, os.DirFS(sweeptest.Dir("base"))))
	storePath := filepath.Join(fs, "history.db")
	opts := testrun.CollectOptions{States: sweeptest.States(t, dir), Now: sweeptest.Now}
	if _, err := history.CollectDir(dir, opts, storePath, nil); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, sweep.ResultsFile))
	sweeptest.Must(t, err)

	free := sweeptest.Fill(t, fs)
	later := opts
	later.Now = sweeptest.Now.Add(time.Hour)
	_, err = history.CollectDir(dir, later, storePath, nil)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("collect on a full disk: %v, want the reason", err)
	}
	if after, err := os.ReadFile(filepath.Join(dir, sweep.ResultsFile)); err != nil || !bytes.Equal(after, before) {
		t.Errorf("results.json changed on a failed collect (%v)", err)
	}
	big := &testrun.Run{ID: "big-1", Name: "big", CollectedAt: sweeptest.Now}
	for i := 0; i < 200; i++ {
		big.Cells = append(big.Cells, testrun.CellResult{CellID: strings.Repeat("a", 12), Name: strings.Repeat("cell-", 40), Outcome: testrun.OK, Detail: strings.Repeat("x", 512)})
	}
	st, err := Open(storePath, false)
	sweeptest.Must(t, err)
	if err := st.Put(big); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("storing a run on a full disk: %v, want the reason", err)
	}
	sweeptest.Must(t, st.Close())
	wantRuns(t, storePath, "base-1")

	free()
	if _, err := history.CollectDir(dir, later, storePath, nil); err != nil {
		t.Fatalf("collect once space is free: %v", err)
	}
	run, err := testrun.ReadRun(dir)
	if err != nil || !run.CollectedAt.Equal(later.Now.UTC()) {
		t.Errorf("results.json after space was freed: %v", err)
	}
	st, err = Open(storePath, false)
	sweeptest.Must(t, err)
	sweeptest.Must(t, st.Put(big))
	sweeptest.Must(t, st.Close())
	wantRuns(t, storePath, "base-1", "big-1")
}

// wantRuns checks that the store at path holds exactly the runs ids
// (sorted).
func wantRuns(t *testing.T, path string, ids ...string) {
	t.Helper()
	st, err := Open(path, true)
	sweeptest.Must(t, err)
	defer st.Close()
	runs, err := st.Runs()
	sweeptest.Must(t, err)
	var got []string
	for _, r := range runs {
		got = append(got, r.ID)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != strings.Join(ids, " ") {
		t.Errorf("the store holds %v, want %v", got, ids)
	}
}
