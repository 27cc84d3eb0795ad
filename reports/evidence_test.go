package reports

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/runtest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/testrun"
)

// Each cell's evidence is listed in the markdown summary (paths relative
// to the sweep, sizes, the first lines of small text files), linked in
// the HTML page and attached in JUnit; a link out of the sweep, a pipe
// and a missing file are named, never read.
func TestEvidence(t *testing.T) {
	dir := sweeptest.Copy(t, "base")
	results, _ := filepath.Glob(filepath.Join(dir, "cells", "*", "result.json"))
	cellDir := filepath.Dir(results[0])
	id := filepath.Base(cellDir)
	var r map[string]any
	b, err := os.ReadFile(results[0])
	sweeptest.Must(t, err)
	sweeptest.Must(t, json.Unmarshal(b, &r))
	r["evidence"] = []string{"logs/worker0.log", "big.bin", "passwd", "outside/x", "fifo", "gone.txt"}
	b, _ = json.Marshal(r)
	sweeptest.Must(t, os.WriteFile(results[0], b, 0o644))
	sweeptest.Must(t, os.MkdirAll(filepath.Join(cellDir, "logs"), 0o755))
	var log strings.Builder
	for i := range 8 {
		log.WriteString("worker0 line " + string(rune('a'+i)) + " ```\n")
	}
	sweeptest.Must(t, os.WriteFile(filepath.Join(cellDir, "logs", "worker0.log"), []byte(log.String()), 0o644))
	sweeptest.Must(t, os.WriteFile(filepath.Join(cellDir, "big.bin"), bytes.Repeat([]byte{0}, 3<<20), 0o644))
	sweeptest.Must(t, os.Symlink("/etc/passwd", filepath.Join(cellDir, "passwd")))
	sweeptest.Must(t, os.Symlink("/etc", filepath.Join(cellDir, "outside")))
	sweeptest.Must(t, syscall.Mkfifo(filepath.Join(cellDir, "fifo"), 0o644))
	run := runtest.CollectDir(t, dir)

	var md bytes.Buffer
	sweeptest.Must(t, WriteSummary(&md, "markdown", run))
	p := "cells/" + id + "/"
	for _, want := range []string{
		"### Evidence",
		"- `" + p + "logs/worker0.log` (152 B)\n\n  ````\n  worker0 line a ```\n",
		"  worker0 line e ```\n  ````\n",
		"- `" + p + "big.bin` (3.0 MiB)\n",
		"- `" + p + "passwd` (a symbolic link, not a file)\n",
		"- `" + p + "outside/x` (outside the cell's directory)\n",
		"- `" + p + "fifo` (a named pipe, not a file)\n",
		"- `" + p + "gone.txt` (missing)\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "worker0 line f") || strings.Contains(md.String(), "root:") {
		t.Errorf("more than the head, or a file out of the sweep, is shown:\n%s", md.String())
	}
	var page bytes.Buffer
	sweeptest.Must(t, WriteHTML(&page, []*testrun.Run{run}, "t"))
	if !strings.Contains(page.String(), `<a href="`+p+`logs/worker0.log">`) || !strings.Contains(page.String(), "<pre>worker0 line a ```") {
		t.Errorf("the HTML page does not link the evidence")
	}
	var x bytes.Buffer
	sweeptest.Must(t, WriteJUnit(&x, run))
	abs, _ := filepath.Abs(filepath.Join(cellDir, "logs", "worker0.log"))
	if !strings.Contains(x.String(), "[[ATTACHMENT|"+abs+"]]") {
		t.Errorf("JUnit does not attach the evidence:\n%s", x.String())
	}
	// Only regular files inside the cell's directory are attached: a
	// symbolic link, a pipe and a missing file are text saying what
	// they are, as in the summary.
	out := html.UnescapeString(x.String())
	for _, want := range []string{
		p + "passwd (not attached: a symbolic link, not a file)\n",
		p + "outside/x (not attached: outside the cell's directory)\n",
		p + "fifo (not attached: a named pipe, not a file)\n",
		p + "gone.txt (not attached: missing)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("JUnit lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(x.String(), "[[ATTACHMENT|"); n != 2 {
		t.Errorf("%d attachments, want 2 (worker0.log and big.bin):\n%s", n, x.String())
	}
	// With no sweep directory nothing can be checked, and nothing is attached.
	run.Dir = ""
	x.Reset()
	sweeptest.Must(t, WriteJUnit(&x, run))
	if strings.Contains(x.String(), "[[ATTACHMENT|") || !strings.Contains(html.UnescapeString(x.String()), p+"logs/worker0.log (not attached: the run's sweep directory is not known)") {
		t.Errorf("no directory, yet attached:\n%s", x.String())
	}
}
