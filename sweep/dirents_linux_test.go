package sweep

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"
)

// The names every cell has are the package's strings, not copies: a
// listing of them is one allocation, the slice.
func TestDirNamesShareTheKnownNames(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{ExitFile, ResultFile, StartedFile} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The records are read once: what is counted is reading them (the
	// getdents buffer comes from a sync.Pool, which the race detector
	// empties at random).
	records := slices.Concat(getdents(t, dir, 4096)...)
	var listed listing
	allocs := testing.AllocsPerRun(20, func() {
		var ok bool
		if listed, ok = appendDirents(nil, records); !ok {
			t.Fatal("appendDirents refused what getdents64 returned")
		}
	})
	if allocs != 1 && !raceDetector {
		t.Errorf("reading the entries of a directory of exit, result.json and harness-started took %.0f allocations, want 1", allocs)
	}
	if len(listed) != 3 {
		t.Fatalf("read %q, want the three names", listed)
	}
	for _, n := range listed {
		if k := cellFileNames[n]; unsafe.StringData(n) != unsafe.StringData(k) {
			t.Errorf("%q is a copy, not the package's string", n)
		}
	}
}

// What is not a run of whole linux_dirent64 records is refused, never
// read past its end.
func TestAppendDirentsRefusesTornRecords(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ResultFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	whole := slices.Concat(getdents(t, dir, 4096)...)
	all, ok := appendDirents(nil, whole)
	if !ok || !slices.Contains(all, ResultFile) {
		t.Fatalf("read %q (ok %v) from the whole answer", all, ok)
	}
	for cut := range len(whole) {
		// A cut between records reads the records before it; any other
		// is refused.
		if names, ok := appendDirents(nil, whole[:cut]); ok && !slices.Equal(names, all[:len(names)]) {
			t.Fatalf("cut at %d: read %q of %q", cut, names, all)
		}
	}
	bad := slices.Clone(whole)
	bad[16], bad[17] = 0xff, 0xff // d_reclen past the end
	if _, ok := appendDirents(nil, bad); ok {
		t.Fatalf("a record longer than the buffer was read")
	}
	bad[16], bad[17] = 3, 0 // d_reclen shorter than the header
	if _, ok := appendDirents(nil, bad); ok {
		t.Fatalf("a record shorter than its header was read")
	}
}
