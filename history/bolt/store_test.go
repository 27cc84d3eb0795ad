package bolt

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/runtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/testrun"
)

// realStore makes a history store with the committed sweeps' runs and a
// note, and returns its bytes.
func realStore(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.db")
	st, err := Open(path, false)
	sweeptest.Must(t, err)
	for _, name := range []string{"base", "cand", "mixed"} {
		sweeptest.Must(t, st.Put(runtest.Collected(t, name)))
	}
	sweeptest.Must(t, st.AddNote(testrun.Note{Sweep: "base-1", Author: "test", Time: sweeptest.Now, Text: "a finding"}))
	sweeptest.Must(t, st.Close())
	b, err := os.ReadFile(path)
	sweeptest.Must(t, err)
	return b
}

// useStore does what every command does with a store: open it, read all
// its runs, one run, and (read-write) put one.
func useStore(path string, readOnly bool) error {
	st, err := Open(path, readOnly)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Runs(); err != nil {
		return err
	}
	if _, err := st.Get("base-1"); err != nil {
		return err
	}
	if !readOnly {
		return st.Put(&testrun.Run{ID: "new-1", Name: "new"})
	}
	return nil
}

// A store file that is no store, or a damaged one, is refused with one
// sentence naming the file and what is wrong: never a crash, never a
// wait, and the file is left as it was.
func TestStoreRefusesDamage(t *testing.T) {
	good := realStore(t)
	if len(good) < 4*4096 {
		t.Fatalf("the test store is only %d bytes", len(good))
	}
	random := make([]byte, len(good))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"cut in half", func(p string) error { return os.WriteFile(p, good[:len(good)/2], 0o644) }, "is cut short"},
		{"cut to its header", func(p string) error { return os.WriteFile(p, good[:3*4096], 0o644) }, "is cut short"},
		{"random bytes", func(p string) error { return os.WriteFile(p, random, 0o644) }, "is not a history store"},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }, "is empty"},
		{"a named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "is a named pipe, not a file"},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }, "is a directory, not a file"},
	} {
		for _, readOnly := range []bool{true, false} {
			if tc.name == "empty" && !readOnly {
				// An empty file holds nothing to lose, and is what another
				// kvsweep creating the store leaves until it has
				// initialised it under its lock: collect makes it a store.
				continue
			}
			path := filepath.Join(t.TempDir(), "history.db")
			sweeptest.Must(t, tc.make(path))
			before, beforeInfo := contents(path)
			err := useStore(path, readOnly)
			var d *DamagedStoreError
			if !errors.As(err, &d) || !strings.Contains(err.Error(), path+" "+tc.want) || !strings.Contains(err.Error(), "restore the last good copy") {
				t.Errorf("%s (read-only %v): %v; want a DamagedStoreError saying %q and how to recover", tc.name, readOnly, err, tc.want)
			}
			after, afterInfo := contents(path)
			if !bytes.Equal(before, after) || beforeInfo.Mode() != afterInfo.Mode() {
				t.Errorf("%s (read-only %v): the file changed", tc.name, readOnly)
			}
		}
	}
	// An empty file becomes a store to collect into.
	empty := filepath.Join(t.TempDir(), "history.db")
	sweeptest.Must(t, os.WriteFile(empty, nil, 0o644))
	sweeptest.Must(t, useStore(empty, false))
	sweeptest.Must(t, useStore(empty, true))
	// The good store still opens, for both.
	path := filepath.Join(t.TempDir(), "history.db")
	sweeptest.Must(t, os.WriteFile(path, good, 0o644))
	sweeptest.Must(t, useStore(path, true))
	sweeptest.Must(t, useStore(path, false))
}

// contents is a file's bytes (a regular file's only: reading a pipe
// would wait) and its information.
func contents(path string) ([]byte, os.FileInfo) {
	fi, _ := os.Lstat(path)
	if fi == nil || !fi.Mode().IsRegular() {
		return nil, fi
	}
	b, _ := os.ReadFile(path)
	return b, fi
}

// FuzzStoreOpen opens corrupted copies of a real store as every command
// does: two runs of bytes XORed, the file cut at some length; whatever the
// bytes, an error or the runs, never a crash.
//
//	go test ./testrun -run X -fuzz FuzzStoreOpen -fuzztime 10m
func FuzzStoreOpen(f *testing.F) {
	good := realStore(f)
	// A lock left by an open that failed half-way is released once the
	// garbage collector closes its file; a short wait keeps the fuzzer
	// fast.
	defer func(d time.Duration) { storeLockTimeout = d }(storeLockTimeout)
	storeLockTimeout = 200 * time.Millisecond
	f.Add(uint32(0), uint16(0), byte(0), uint32(0), uint16(0), byte(0), uint32(0))
	f.Add(uint32(4096), uint16(64), byte(0xff), uint32(0), uint16(0), byte(0), uint32(0))
	f.Add(uint32(16), uint16(8), byte(1), uint32(8192), uint16(4096), byte(0x5a), uint32(len(good)/2))
	f.Fuzz(func(t *testing.T, at1 uint32, n1 uint16, x1 byte, at2 uint32, n2 uint16, x2 byte, cut uint32) {
		b := bytes.Clone(good)
		for _, r := range []struct {
			at uint32
			n  uint16
			x  byte
		}{{at1, n1, x1}, {at2, n2, x2}} {
			at := int(r.at % uint32(len(b)))
			for i := at; i < min(len(b), at+int(r.n)); i++ {
				b[i] ^= r.x
			}
		}
		if cut > 0 {
			b = b[:int(cut%uint32(len(b)))]
		}
		path := filepath.Join(t.TempDir(), "history.db")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = useStore(path, true)
		_ = useStore(path, false)
	})
}
