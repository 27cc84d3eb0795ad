package scheduler_test

import (
	"path/filepath"
	"testing"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/sweep"
)

// renderSpec renders a spec into a new sweep directory, as kvsweep render does.
func renderSpec(t testing.TB, path string, src []byte, opts render.Options) (string, *sweep.Manifest) {
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
