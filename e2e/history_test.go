package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/history/bolt"
	_ "github.com/kvsweep/kvsweep/history/pg" // postgres:// for history.StoredRuns
	"github.com/kvsweep/kvsweep/internal/testing/pgtest"
	"github.com/kvsweep/kvsweep/internal/testing/runtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// The team's history store on a real PostgreSQL (internal/testing/pgtest), driven
// through the kvsweep binary as lanes and people drive it.

// store runs the binary with the history store at loc.
func store(t testing.TB, loc string, extraEnv []string, args ...string) (string, string, error) {
	t.Helper()
	return kvsweep(t, cluster{}, append([]string{"KVSWEEP_STORE=" + loc}, extraEnv...), args...)
}

func mustStore(t testing.TB, loc string, args ...string) string {
	t.Helper()
	out, errs, err := store(t, loc, nil, args...)
	if err != nil {
		t.Fatalf("kvsweep %s: %v\n%s%s", strings.Join(args, " "), err, out, errs)
	}
	return out
}

// sweepAs copies the committed sweep NAME into the test's directory as a
// sweep of another id.
func sweepAs(t testing.TB, name, id string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	sweeptest.Must(t, os.CopyFS(dir, os.DirFS(sweeptest.Dir(name))))
	old := name + "-1"
	sweeptest.Must(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, bytes.ReplaceAll(b, []byte(`"`+old+`"`), []byte(`"`+id+`"`)), 0o644)
	}))
	return dir
}

func storedRuns(t testing.TB, loc string) []*testrun.Run {
	t.Helper()
	runs, err := history.StoredRuns(loc, false)
	sweeptest.Must(t, err)
	return runs
}

// Eight collects of different sweeps and eight re-collects of one sweep,
// sixteen kvsweep processes at once against one database: every run is
// there once and whole, and the notes of the sweep collected again are
// kept.
func TestPostgresConcurrentCollects(t *testing.T) {
	db := pgtest.DB(t)
	shared := sweepAs(t, "base", "shared-1")
	mustStore(t, db, "collect", shared, "--scheduler", "local")
	mustStore(t, db, "note", "shared-1", "TC-06 regressed on n2", "--author", "tester")
	var dirs []string
	for i := range 8 {
		dirs = append(dirs, sweepAs(t, "cand", fmt.Sprintf("lane-%d", i)), shared)
	}
	var wg sync.WaitGroup
	for _, dir := range dirs {
		wg.Go(func() {
			if out, errs, err := store(t, db, nil, "collect", dir, "--scheduler", "local"); err != nil {
				t.Errorf("collect %s: %v\n%s%s", dir, err, out, errs)
			}
		})
	}
	wg.Wait()
	runs := storedRuns(t, db)
	seen := map[string]int{}
	for _, r := range runs {
		seen[r.ID]++
		if r.ID == "shared-1" {
			if len(r.Notes) != 1 || r.Notes[0].Text != "TC-06 regressed on n2" {
				t.Errorf("the notes of the sweep collected again: %v", r.Notes)
			}
		}
		if len(r.Cells) != 10 || !r.Complete() {
			t.Errorf("run %s has %d cells (%s), want 10 OK", r.ID, len(r.Cells), r.CountsLine())
		}
	}
	if len(runs) != 9 || len(seen) != 9 {
		t.Errorf("%d runs stored (%v), want 9, each once", len(runs), seen)
	}
}

// A collect killed (SIGKILL) at random moments while it stores a large
// run, twenty times: every run the store lists is whole, and a last
// collect stores the run.
func TestPostgresCollectKilled(t *testing.T) {
	db := pgtest.DB(t)
	dir := largeSweep(t, 100) // 2,000 cells
	m, err := sweep.ReadManifest(dir)
	sweeptest.Must(t, err)
	// How long one collect takes here, now: the kills land within it.
	start := time.Now()
	mustStore(t, db, "collect", dir, "--scheduler", "local")
	took := time.Since(start)
	mustStore(t, db, "note", m.SweepID, "kept across kills", "--author", "tester")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	killed := 0
	for round := range 20 {
		cmd := exec.Command(binary, "collect", dir, "--scheduler", "local")
		cmd.Env = append(os.Environ(), "KVSWEEP_STORE="+db)
		sweeptest.Must(t, cmd.Start())
		time.Sleep(time.Duration(rng.Int64N(int64(took))))
		if cmd.Process.Signal(syscall.SIGKILL) == nil {
			killed++
		}
		_ = cmd.Wait()
		for _, r := range storedRuns(t, db) {
			if len(r.Cells) != len(m.Cells) {
				t.Fatalf("round %d: run %s listed with %d of its %d cells", round, r.ID, len(r.Cells), len(m.Cells))
			}
			if len(r.Notes) != 1 {
				t.Fatalf("round %d: run %s has notes %v", round, r.ID, r.Notes)
			}
		}
	}
	t.Logf("%d of 20 collects killed (one collect took %v)", killed, took)
	mustStore(t, db, "collect", dir, "--scheduler", "local")
	runs := storedRuns(t, db)
	if len(runs) != 1 || len(runs[0].Cells) != len(m.Cells) {
		t.Fatalf("after the last collect: %d runs", len(runs))
	}
}

// largeSweep renders a sweep of 20 x repeats cells and writes their
// results with the simulated harness (bench/gen_results.py).
func largeSweep(t testing.TB, repeats int) string {
	t.Helper()
	tmp := t.TempDir()
	reps := make([]string, repeats)
	for i := range reps {
		reps[i] = fmt.Sprintf("%q", fmt.Sprint(i+1))
	}
	spec := fmt.Sprintf(`version: 1
name: large
scheduler: local
harness: {command: [python3, %q, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]}
topologies: {aggregated: {resources: {time: 5m}}}
geometries: {g0: {}, g1: {}, g2: {}, g3: {}, g4: {}, g5: {}, g6: {}, g7: {}, g8: {}, g9: {}}
matrix:
  engine: [vllm, sglang]
  topology: [aggregated]
  geometry: [g0, g1, g2, g3, g4, g5, g6, g7, g8, g9]
  case: [TC-01, TC-02, TC-03]
  repeat: [%s]
`, harness, strings.Join(reps, ", "))
	path := filepath.Join(tmp, "spec.yaml")
	sweeptest.Must(t, os.WriteFile(path, []byte(spec), 0o644))
	dir := filepath.Join(tmp, "sweep")
	mustStore(t, "", "render", path, "--out", dir)
	if out, err := exec.Command("python3", "../bench/gen_results.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen_results.py: %v\n%s", err, out)
	}
	return dir
}

// A database that is down when collect stores the run: results.json is
// written, collect exits non-zero naming the store without its password
// and how to finish; with the database back, store push finishes it. A
// database that comes back while collect retries is waited for.
func TestPostgresDown(t *testing.T) {
	srv := pgtest.Own(t)
	u, err := url.Parse(srv.NewDB(t))
	sweeptest.Must(t, err)
	u.User = url.UserPassword("kvsweep", "s3cret-in-url")
	db := u.String()
	shown := strings.Replace(db, ":s3cret-in-url", "", 1)
	env := []string{"KVSWEEP_STORE_RETRY=3s", "PGPASSWORD=s3cret-in-env"}
	dir := sweepAs(t, "base", "down-1")

	srv.Pause()
	out, errs, err := store(t, db, env, "collect", dir, "--scheduler", "local")
	if err == nil {
		t.Fatalf("collect with the database down succeeded:\n%s%s", out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, sweep.ResultsFile)); err != nil {
		t.Errorf("no results.json: %v", err)
	}
	for _, want := range []string{"collected sweep down-1: 10 cells: 10 OK", "the history store " + shown + " was not updated", "kvsweep store push " + dir} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("collect says:\n%s%s\nwant %q", out, errs, want)
		}
	}
	if strings.Contains(out+errs, "s3cret") {
		t.Errorf("a password is printed:\n%s%s", out, errs)
	}
	sweeptest.Must(t, srv.Resume())
	mustStore(t, db, "store", "push", dir)
	if runs := storedRuns(t, db); len(runs) != 1 || runs[0].ID != "down-1" {
		t.Fatalf("after store push: %d runs", len(runs))
	}

	// Down when collect starts, back while it retries: it waits.
	again := sweepAs(t, "cand", "back-1")
	srv.Pause()
	cmd := exec.Command(binary, "collect", again, "--scheduler", "local")
	cmd.Env = append(os.Environ(), "KVSWEEP_STORE="+db, "KVSWEEP_STORE_RETRY=10m")
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	sweeptest.Must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for !strings.Contains(stderr.String(), "retrying in") {
		select {
		case err := <-done:
			t.Fatalf("collect ended (%v) before it retried:\n%s", err, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	sweeptest.Must(t, srv.Resume())
	if err := <-done; err != nil {
		t.Fatalf("collect while the database came back: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "history store "+shown) || strings.Contains(stderr.String(), "s3cret") {
		t.Errorf("the retry lines:\n%s", stderr.String())
	}
	if runs := storedRuns(t, db); len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
}

// A 200-run history with notes moves bolt -> PostgreSQL -> bolt without
// loss: report --history --format json is the same on all three, and a
// second copy writes nothing.
func TestStoreCopyRoundTrip(t *testing.T) {
	tmp := t.TempDir()
	boltPath := filepath.Join(tmp, "history.db")
	st, err := bolt.Open(boltPath, false)
	sweeptest.Must(t, err)
	base := runtest.Collected(t, "base")
	for i := range 200 {
		r := *base
		r.ID = fmt.Sprintf("nightly-%03d", i)
		r.CollectedAt = base.CollectedAt.Add(time.Duration(i) * time.Hour)
		r.Started = r.CollectedAt.Format(time.RFC3339)
		sweeptest.Must(t, st.Put(&r))
		if i%10 == 0 {
			sweeptest.Must(t, st.AddNote(testrun.Note{Sweep: r.ID, Author: "tester", Time: time.Now(), Text: fmt.Sprintf("finding %d", i)}))
		}
	}
	sweeptest.Must(t, st.Close())
	db := pgtest.DB(t)
	back := filepath.Join(tmp, "back.db")
	out := mustStore(t, "", "store", "copy", boltPath, db)
	if !strings.Contains(out, "copied 200 runs") || !strings.Contains(out, "200 written, 0 already there; 20 notes added") {
		t.Errorf("store copy bolt -> postgres: %s", out)
	}
	mustStore(t, "", "store", "copy", db, back)
	out = mustStore(t, "", "store", "copy", boltPath, db)
	if !strings.Contains(out, "0 written, 200 already there; 0 notes added") {
		t.Errorf("a second copy: %s", out)
	}
	want := mustStore(t, boltPath, "report", "--history", "--format", "json")
	for _, loc := range []string{db, back} {
		if got := mustStore(t, loc, "report", "--history", "--format", "json"); got != want {
			t.Errorf("report --history of %s differs from the bbolt store's", loc)
		}
	}
	if !json.Valid([]byte(want)) || !strings.Contains(want, "nightly-199") || !strings.Contains(want, "finding 190") {
		t.Errorf("report --history --format json lacks the runs or notes:\n%.300s", want)
	}
}

// BenchmarkHistoryStore: the history store's two costs a user waits for,
// on each backend, through the binary: report --history over 1,000
// stored runs, and one collect of 10,000 results into the store (beside
// the same collect without a store, the peer).
//
//	bench/run.sh history
func BenchmarkHistoryStore(b *testing.B) {
	bolt := filepath.Join(b.TempDir(), "history.db")
	stores := map[string]string{"bolt": bolt, "postgres": pgtest.DB(b)}
	base := runtest.Collected(b, "base")
	for _, loc := range stores {
		st, err := history.Open(loc, false)
		sweeptest.Must(b, err)
		for i := range 1000 {
			r := *base
			r.ID = fmt.Sprintf("nightly-%04d", i)
			r.CollectedAt = base.CollectedAt.Add(time.Duration(i) * time.Hour)
			r.Started = ""
			sweeptest.Must(b, st.Put(&r))
		}
		sweeptest.Must(b, st.Close())
	}
	for _, name := range []string{"bolt", "postgres"} {
		b.Run("history-1000/"+name, func(b *testing.B) {
			for b.Loop() {
				mustStore(b, stores[name], "report", "--history", "--format", "json")
			}
		})
	}
	dir := largeSweep(b, 500) // 10,000 cells
	for _, name := range []string{"none", "bolt", "postgres"} {
		b.Run("collect-10000/"+name, func(b *testing.B) {
			args := []string{"collect", dir, "--scheduler", "local"}
			if name == "none" {
				args = append(args, "--no-store")
			}
			for b.Loop() {
				mustStore(b, stores[name], args...)
			}
		})
	}
}
