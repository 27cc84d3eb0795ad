package testrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
)

// The evidence and logs of the cells that did not pass are copied, under
// their sweep paths, within the size limit; a link out of the sweep is
// never followed; what was left out is listed with why.
func TestGatherArtifacts(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	run := collectDir(t, dir)
	var failing *CellResult
	for i, c := range run.Cells {
		if !passed(c) && c.Outcome == OK {
			failing = &run.Cells[i]
		}
	}
	if failing == nil {
		t.Fatal("the mixed sweep has no failing cell with a result")
	}
	cd := filepath.Join(dir, "cells", failing.CellID)
	sweeptest.Must(t, os.WriteFile(filepath.Join(cd, "worker.log"), []byte("worker log\n"), 0o644))
	sweeptest.Must(t, os.WriteFile(filepath.Join(cd, "big.out"), bytes.Repeat([]byte("x"), 2<<20), 0o644))
	sweeptest.Must(t, os.Symlink("/etc/passwd", filepath.Join(cd, "passwd.log")))
	failing.Evidence = []string{"worker.log", "../../../escape"}
	dst := filepath.Join(t.TempDir(), "art")
	g, err := run.GatherArtifacts(dst, 1<<20)
	sweeptest.Must(t, err)
	if b, err := os.ReadFile(filepath.Join(dst, "cells", failing.CellID, "worker.log")); err != nil || string(b) != "worker log\n" {
		t.Errorf("worker.log: %q %v", b, err)
	}
	listing, err := os.ReadFile(filepath.Join(dst, "ARTIFACTS.txt"))
	sweeptest.Must(t, err)
	for _, want := range []string{
		"left out: cells/" + failing.CellID + "/big.out (2.0 MiB: over the 1.0 MiB limit)",
		"left out: cells/" + failing.CellID + "/passwd.log (not a regular file)",
		"(outside the cell's directory)",
	} {
		if !strings.Contains(string(listing), want) {
			t.Errorf("ARTIFACTS.txt lacks %q:\n%s", want, listing)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "cells", failing.CellID, "passwd.log")); err == nil {
		t.Error("a link out of the sweep was copied")
	}
	if g.Bytes > 1<<20 || g.Files == 0 {
		t.Errorf("gathered %+v", g)
	}
}
