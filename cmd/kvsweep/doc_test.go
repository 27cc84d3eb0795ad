package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/shq"
)

// The package doc is the manual: every "$ kvsweep ..." example in doc.go
// runs here, from the repository root, and prints exactly what the doc
// shows under it.
func TestDocExamples(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	examples := docExamples(string(src))
	if len(examples) < 2 {
		t.Fatalf("doc.go has %d examples, want the ones it shows", len(examples))
	}
	// The examples write into the sweeps they read (results.json,
	// observed.json): they run on copies, beside the examples they name.
	work := t.TempDir()
	exampleDir, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exampleDir, filepath.Join(work, "examples")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(work, "testrun", "testdata"), os.DirFS("../../testrun/testdata")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	t.Setenv("KVSWEEP_STORE", t.TempDir()+"/history.db")
	for _, ex := range examples {
		var out, errb bytes.Buffer
		if code := run(ex.args, &out, &errb); code != 0 {
			t.Errorf("$ kvsweep %s: exit %d\n%s", shq.Join(ex.args), code, errb.String())
			continue
		}
		if got := trimLines(out.String()); got != ex.want {
			t.Errorf("$ kvsweep %s printed\n%s\nbut doc.go shows\n%s", shq.Join(ex.args), got, ex.want)
		}
	}
}

type docExample struct {
	args []string
	want string
}

// docExamples reads the "//\t$ kvsweep ARGS" lines of a doc comment and the
// indented output lines after each (blank lines among them too), up to
// the next line that is neither.
func docExamples(src string) []docExample {
	var out []docExample
	var cur *docExample
	var lines []string
	flush := func() {
		if cur != nil {
			cur.want = trimLines(strings.Join(lines, "\n"))
			out = append(out, *cur)
		}
		cur, lines = nil, nil
	}
	for _, l := range strings.Split(src, "\n") {
		body, indented := strings.CutPrefix(l, "//\t")
		switch {
		case indented && strings.HasPrefix(body, "$ kvsweep "):
			flush()
			cur = &docExample{args: strings.Fields(strings.TrimPrefix(body, "$ kvsweep "))}
		case indented && cur != nil:
			lines = append(lines, body)
		case l == "//" && cur != nil:
			// A blank line inside the output; a paragraph after it ends it.
			lines = append(lines, "")
		default:
			flush()
		}
	}
	flush()
	return out
}

func trimLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
