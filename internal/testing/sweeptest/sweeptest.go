// Package sweeptest serves the tests of the packages that read collected
// sweeps (testrun, analysis, reports): the committed sweep directories
// under testrun/testdata, copies of them a test may change, and the
// scheduler's word on their cells as kvsweep collect asks for it.
package sweeptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/scheduler/local"
	"github.com/kvsweep/kvsweep/sweep"
)

// Now is the collection time of the committed sweeps in tests, so that
// their reports are the same bytes on every run.
var Now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// Dir is the committed sweep NAME (base, cand, mixed).
func Dir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testrun", "testdata", name)
}

// Copy copies the committed sweep NAME into a directory of the test's,
// for a test that changes it.
func Copy(t testing.TB, name string) string {
	t.Helper()
	src := Dir(name)
	dst := filepath.Join(t.TempDir(), "sweep")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

// States is the scheduler's word on each cell of the sweep in dir, from
// the states its journal records, as kvsweep collect asks for it.
func States(t testing.TB, dir string) map[string]sweep.CellState {
	t.Helper()
	states, err := scheduler.States(context.Background(), dir, local.New(local.Config{Dir: dir}), func(err error) { t.Fatal(err) })
	if err != nil {
		t.Fatal(err)
	}
	return states
}

// Must fails the test on an error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// SmallFS mounts a tmpfs of size bytes for the test and unmounts it when
// the test ends: a real file system that can be filled. It needs root,
// as the test command runs.
func SmallFS(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a %d-byte tmpfs for the test: %v %s (the test command runs as root)", size, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file into the file system at dir until it is full, and
// returns the function that frees the space again.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	p := filepath.Join(dir, ".fill")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	return func() { Must(t, os.Remove(p)) }
}
