// Package rendertest renders specs into sweep directories for the tests of
// the packages that run them (the schedulers), as kvsweep render does.
package rendertest

import (
	"path/filepath"
	"testing"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/sweep"
)

// Render renders the spec src (named path in messages) into a new sweep
// directory under the test's temporary directory, as kvsweep render does,
// and returns the directory and its manifest.
func Render(t testing.TB, path string, src []byte, opts render.Options) (string, *sweep.Manifest) {
	t.Helper()
	s, cells, err := matrix.ParseCells(path, src)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sweep")
	m, err := render.Render(s, src, cells, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}
