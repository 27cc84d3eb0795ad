package result

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

// FuzzFastDecode holds fastDecode to the reference decoder: whenever it
// accepts a document, the reference accepts it too with an equal tree.
func FuzzFastDecode(f *testing.F) {
	good, err := os.ReadFile(sweeps + "base/cells/" + mustFirstCell(f) + "/result.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(good), `{}`, `[]`, `""`, `0`, `-0.5e+3`, `1e999`, `{"a":1,"a":2}`, `[1,]`, `{"a" 1}`, `01`, `1.`, `-`, `"\u00e9\ud83d\ude00"`,
		"\"\xff\xfe\"", `"\ud800"`, `"a\"b\\c\/d\n"`, `{"x": [true, false, null, {"y": []}]}`, ` {} `, `{} {}`, `[[[[[[[[[[]]]]]]]]]]`,
		"\"tab\there\"", `{"k":"v"}x`, `nul`, `tru`, `"unterminated`, `{"a":{"b":{"c":1E-2}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := fastDecode(b)
		slow, err := slowDecodeJSON(b)
		if !ok {
			return // the reference decides; nothing to compare
		}
		if err != nil {
			t.Fatalf("fastDecode accepted %q, the reference refused it: %v", b, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fastDecode %#v, the reference %#v", b, fast, slow)
		}
	})
}

func mustFirstCell(f *testing.F) string {
	m, err := sweep.ReadManifest(sweeps + "base")
	if err != nil {
		f.Fatal(err)
	}
	return m.Cells[0].ID
}

// Every committed result.json the reference decodes, fastDecode decodes:
// the fast path is the one taken, not a fallback in disguise.
func TestFastDecodeTakesTheResults(t *testing.T) {
	files, _ := filepath.Glob(sweeps + "*/cells/*/result.json")
	n := 0
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := slowDecodeJSON(b); err != nil {
			continue
		}
		n++
		if _, ok := fastDecode(b); !ok {
			t.Errorf("%s: the reference decodes it, fastDecode gave up", p)
		}
	}
	if n < 10 {
		t.Fatalf("only %d results decoded", n)
	}
}

// sweeps holds the committed sweeps whose result.json files the fuzzers
// start from (testrun collects them).
const sweeps = "../testrun/testdata/"
