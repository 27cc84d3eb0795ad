package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// getdents reads the directory dir with getdents64 into buffers of size
// bytes and returns what each call gave.
func getdents(t *testing.T, dir string, size int) [][]byte {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var out [][]byte
	for {
		buf := make([]byte, size)
		n, err := unix.ReadDirent(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n <= 0 {
			return out
		}
		out = append(out, buf[:n])
	}
}

// A cell directory's listing is what unix.ParseDirent reads from the
// same getdents64 answers, over several calls, with every kind of name a
// file system hands back.
func TestDirNamesAsParseDirent(t *testing.T) {
	dir := t.TempDir()
	names := []string{ExitFile, ResultFile, StartedFile, AdapterLog, "é-ü", strings.Repeat("n", 255), "a b", ".hidden", "x\x01y"}
	for i := range 400 {
		names = append(names, fmt.Sprintf("file-%03d-%s", i, strings.Repeat("x", i%60)))
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	bufs := getdents(t, dir, 4096)
	if len(bufs) < 2 {
		t.Fatalf("the directory took %d getdents calls; the test wants several", len(bufs))
	}
	for _, b := range bufs {
		_, _, want = unix.ParseDirent(b, -1, want)
		var ok bool
		if got, ok = appendDirents(got, b); !ok {
			t.Fatalf("appendDirents refused what getdents64 returned")
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("appendDirents read %d names, unix.ParseDirent %d:\n got %q\nwant %q", len(got), len(want), got, want)
	}

	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	listed, err := dirNames(fd)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal([]string(listed), want) {
		t.Fatalf("dirNames listed %q, want %q", listed, want)
	}
	for _, n := range append(names, "sub") {
		if !listed.has(n) {
			t.Errorf("the listing does not have %q", n)
		}
	}
	for _, n := range []string{"", ".", "..", "nope", MismatchFile} {
		if listed.has(n) {
			t.Errorf("the listing has %q", n)
		}
	}
}

func FuzzAppendDirents(f *testing.F) {
	dir := f.TempDir()
	for _, n := range []string{ExitFile, ResultFile, "x"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			f.Fatal(err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		f.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := unix.ReadDirent(fd, buf)
	unix.Close(fd)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(buf[:n])
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := appendDirents(nil, b)
		if !ok {
			return
		}
		_, _, want := unix.ParseDirent(b, -1, nil)
		if !slices.Equal([]string(got), want) {
			t.Fatalf("appendDirents read %q, unix.ParseDirent %q", got, want)
		}
	})
}
