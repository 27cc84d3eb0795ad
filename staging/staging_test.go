package staging

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func name(c byte, ext string) string { return "sha256-" + strings.Repeat(string(c), 64) + "." + ext }

// file writes path with its time set to age before now.
func file(t *testing.T, path string, age time.Duration) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, now.Add(-age), now.Add(-age)); err != nil {
		t.Fatal(err)
	}
}

// hold takes path's lock as a job does (flock, shared or exclusive) until
// the test ends.
func hold(t *testing.T, path string, how int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		t.Fatal(err)
	}
}

func TestPrune(t *testing.T) {
	dir := t.TempDir()
	old, recent, busy, noUse := name('a', "sqsh"), name('b', "sif"), name('c', "sqsh"), name('d', "sqsh")
	file(t, filepath.Join(dir, old), 30*24*time.Hour)
	file(t, filepath.Join(dir, old+".use"), 9*24*time.Hour)
	file(t, filepath.Join(dir, old+".import"), 30*24*time.Hour)
	// Staged long ago, used an hour ago: the use counts.
	file(t, filepath.Join(dir, recent), 30*24*time.Hour)
	file(t, filepath.Join(dir, recent+".use"), time.Hour)
	// Unused for long, but a running job holds it.
	file(t, filepath.Join(dir, busy), 30*24*time.Hour)
	file(t, filepath.Join(dir, busy+".use"), 30*24*time.Hour)
	hold(t, filepath.Join(dir, busy+".use"), syscall.LOCK_SH)
	// No use lock (staged by hand): its own time.
	file(t, filepath.Join(dir, noUse), 8*24*time.Hour)
	// A killed import's file, and one under way (its import lock held).
	killed := "." + name('e', "sqsh") + ".node1-42.tmp"
	file(t, filepath.Join(dir, killed), time.Hour)
	going := "." + name('f', "sif") + ".node2-7.tmp"
	file(t, filepath.Join(dir, going), time.Minute)
	file(t, filepath.Join(dir, name('f', "sif")+".import"), time.Minute)
	hold(t, filepath.Join(dir, name('f', "sif")+".import"), syscall.LOCK_EX)
	// Not the jobs': left alone.
	file(t, filepath.Join(dir, "notes.txt"), 90*24*time.Hour)
	os.Symlink("/etc/passwd", filepath.Join(dir, name('9', "sqsh")))

	opt := Options{UnusedFor: 7 * 24 * time.Hour, Now: now, DryRun: true}
	entries, err := Prune(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		old:    "removed",
		recent: "kept used 60m ago",
		busy:   "kept in use by a running job",
		noUse:  "removed",
		killed: "removed",
		going:  "kept an import in progress",
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.Name] = strings.TrimSpace(e.Action + " " + e.Why)
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: %q, want %q", n, got[n], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("decided about %d files, want %d: %v", len(got), len(want), got)
	}
	if _, err := os.Stat(filepath.Join(dir, old)); err != nil {
		t.Fatalf("a dry run removed %s", old)
	}

	opt.DryRun = false
	if _, err := Prune(dir, opt); err != nil {
		t.Fatal(err)
	}
	for n, w := range want {
		_, err := os.Lstat(filepath.Join(dir, n))
		if gone := err != nil; gone != strings.HasPrefix(w, "removed") {
			t.Errorf("%s: gone %v, want %s", n, gone, w)
		}
	}
	for _, n := range []string{"notes.txt", name('9', "sqsh"), old + ".use", old + ".import"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s was removed: %v", n, err)
		}
	}
}

func TestPruneRefusesWhatIsNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	file(t, f, 0)
	if _, err := Prune(f, Options{}); err == nil || !strings.Contains(err.Error(), f+": not a directory") {
		t.Errorf("%v", err)
	}
	if _, err := Prune(f+"-missing", Options{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("%v", err)
	}
}
