package testrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/sweep"
)

// A sweep directory is hostile input. Each cell below is made hostile in
// one way; collect neither hangs nor grows without bound, gives that cell
// alone an INVALID outcome naming what is wrong, collects every other cell
// and writes results.json.
func TestHostileSweepFiles(t *testing.T) {
	dir := sweeptest.Copy(t, "base")
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	cellDir := func(i int) string { return filepath.Join(dir, "cells", m.Cells[i].ID) }
	good, err := os.ReadFile(filepath.Join(cellDir(0), "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	sweeptest.Must(t, os.WriteFile(filepath.Join(outside, "result.json"), good, 0o644))
	replace := func(i int, name string, f func(p string)) {
		p := filepath.Join(cellDir(i), name)
		sweeptest.Must(t, os.RemoveAll(p))
		f(p)
	}
	fifo := func(p string) { sweeptest.Must(t, syscall.Mkfifo(p, 0o644)) }
	want := map[int]string{}
	// result.json a FIFO: opening it would wait for a writer forever.
	replace(1, "result.json", fifo)
	want[1] = "result.json is a named pipe, not a regular file"
	// result.json a link to /dev/zero: reading it would never end.
	replace(2, "result.json", func(p string) { sweeptest.Must(t, os.Symlink("/dev/zero", p)) })
	want[2] = "result.json is a link to /dev/zero, outside the sweep directory"
	// The cell directory itself a link out of the sweep.
	replace(3, "", func(p string) { sweeptest.Must(t, os.Symlink(outside, strings.TrimSuffix(p, "/"))) })
	want[3] = "exit marker: cells/" + m.Cells[3].ID + "/exit is under cells/" + m.Cells[3].ID + ", a link to " + outside + ", outside the sweep directory"
	// A number beyond a 64-bit float.
	replace(4, "result.json", func(p string) {
		sweeptest.Must(t, os.WriteFile(p, bytes.Replace(good, []byte(`"value": `), []byte(`"value": 1e999, "x": `), 1), 0o644))
	})
	want[4] = "result.json: at /cases/0/metrics/"
	// A key twice in one object: the last one would win.
	replace(5, "result.json", func(p string) {
		sweeptest.Must(t, os.WriteFile(p, bytes.Replace(good, []byte(`"verdict": "PASS"`), []byte(`"verdict": "FAIL", "verdict": "PASS"`), 1), 0o644))
	})
	want[5] = `result.json: at /cases/0: key "verdict" occurs twice in one object`
	// An exit marker that is a FIFO.
	replace(6, "exit", fifo)
	want[6] = "exit marker: cells/" + m.Cells[6].ID + "/exit is a named pipe, not a regular file"
	// source-revisions.json a FIFO: the result is kept, without provenance.
	replace(7, "source-revisions.json", fifo)
	// result.json a link to a file in its own cell: read through the link.
	sweeptest.Must(t, os.Rename(filepath.Join(cellDir(8), "result.json"), filepath.Join(cellDir(8), "real.json")))
	sweeptest.Must(t, os.Symlink("real.json", filepath.Join(cellDir(8), "result.json")))
	// The cell directory a regular file.
	replace(9, "", func(p string) { sweeptest.Must(t, os.WriteFile(strings.TrimSuffix(p, "/"), good, 0o644)) })
	want[9] = "exit marker: cells/" + m.Cells[9].ID + "/exit is under cells/" + m.Cells[9].ID + ", which is not a directory"

	run, err := Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range run.Cells {
		w, bad := want[i]
		switch {
		case bad && (c.Outcome != Invalid || !strings.HasPrefix(c.Detail, w)):
			t.Errorf("cell %d: %s %q, want INVALID %q", i, c.Outcome, c.Detail, w)
		case !bad && c.Outcome != OK:
			t.Errorf("cell %d: %s %q, want OK", i, c.Outcome, c.Detail)
		}
	}
	if run.Cells[4].Outcome == Invalid && !strings.Contains(run.Cells[4].Detail, "1e999 is out of the range of a 64-bit number") {
		t.Errorf("1e999: %q", run.Cells[4].Detail)
	}
	if run.Cells[7].Image.SourceRevisions != nil {
		t.Errorf("a FIFO was read as source-revisions.json")
	}
	if err := WriteRun(dir, run); err != nil {
		t.Fatalf("results.json: %v", err)
	}
}

// A cell's result.json that links to a sibling cell's is refused: a cell's
// files are read inside its own directory, and the refusal says so.
func TestLinkToSiblingCell(t *testing.T) {
	dir := sweeptest.Copy(t, "base")
	m, err := sweep.ReadManifest(dir)
	sweeptest.Must(t, err)
	a, b := m.Cells[0].ID, m.Cells[1].ID
	p := filepath.Join(dir, "cells", b, "result.json")
	sweeptest.Must(t, os.Remove(p))
	sweeptest.Must(t, os.Symlink("../"+a+"/result.json", p))
	run, err := Collect(dir, CollectOptions{})
	sweeptest.Must(t, err)
	want := "result.json is a link to ../" + a + "/result.json, outside its cell's directory (cells/" + b + ")"
	if c := run.Cells[1]; c.Outcome != Invalid || c.Detail != want {
		t.Errorf("%s %q, want INVALID %q", c.Outcome, c.Detail, want)
	}
	if c := run.Cells[0]; c.Outcome != OK {
		t.Errorf("the sibling: %s %q", c.Outcome, c.Detail)
	}
}
