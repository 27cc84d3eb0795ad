package matrix

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzSpec feeds arbitrary bytes to the decoder and expander: they must
// return cells or a positioned error, never panic, and cells must have
// unique ids and a command line.
func FuzzSpec(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range append(seeds, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse("fuzz.yaml", src)
		if err != nil {
			checkPositioned(t, err)
			return
		}
		cells, err := Expand(s)
		if err != nil {
			checkPositioned(t, err)
			return
		}
		seen := map[string]bool{}
		for _, c := range cells {
			if seen[c.ID] {
				t.Fatalf("duplicate cell id %s", c.ID)
			}
			seen[c.ID] = true
			if len(c.Argv) == 0 {
				t.Fatalf("cell %s has no command line", c.Name)
			}
		}
	})
}

func checkPositioned(t *testing.T, err error) {
	el, ok := err.(ErrorList)
	if !ok || len(el) == 0 {
		t.Fatalf("error is not a positioned ErrorList: %T %v", err, err)
	}
	for _, e := range el {
		if e.Pos.Line < 1 || e.Pos.Col < 1 || e.File != "fuzz.yaml" {
			t.Fatalf("bad position in %q", e.Error())
		}
	}
}
