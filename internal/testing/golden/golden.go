// Package golden compares test output with a file in testdata, and with
// -update rewrites the file instead. A mismatch prints a unified diff and
// leaves the output beside the golden file as NAME.got, to look at or to
// diff with other tools; a match removes a NAME.got left earlier. Tests
// only.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/diff"
)

// Update is the -update flag of the tests that import this package.
var Update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// Check fails t when got differs from the file at path (relative to the
// test's package); with -update it writes got there.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update creates it)", err, t.Name())
	}
	if bytes.Equal(got, want) {
		os.Remove(path + ".got")
		return
	}
	kept := "the output is in " + path + ".got"
	if err := os.WriteFile(path+".got", got, 0o644); err != nil {
		kept = "the output could not be kept: " + err.Error()
	}
	t.Errorf("%s differs from the output (%s; go test -run %s -update rewrites the golden file: review the diff):\n%s",
		path, kept, t.Name(), diff.Diff(path, want, path+".got", got))
}
