package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
	"github.com/kvsweep/kvsweep/internal/testing/fill"
)

// manifestCells are the cells of the committed sweeps' manifests.
func manifestCells(t testing.TB) []Cell {
	paths, _ := filepath.Glob("../testrun/testdata/*/manifest.json")
	var cells []Cell
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		cells = append(cells, m.Cells...)
	}
	if len(cells) < 10 {
		t.Fatalf("only %d cells", len(cells))
	}
	return cells
}

// Every cell render writes decodes on decodeCell's path, as
// json.Unmarshal decodes it; so does a Cell with every field set, so a
// field added to Cell without decodeCell fails here.
func TestDecodeCellTakesTheCells(t *testing.T) {
	var full Cell
	fill.Value(reflect.ValueOf(&full).Elem())
	for _, c := range append(manifestCells(t), full) {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeCell(b, &jsonscan.Interner{})
		if !ok {
			t.Fatalf("decodeCell gave up on %s", b)
		}
		var want Cell
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\ndecodeCell     %+v\njson.Unmarshal %+v", b, got, want)
		}
	}
}

// FuzzDecodeCell holds decodeCell to json.Unmarshal.
func FuzzDecodeCell(f *testing.F) {
	for _, c := range manifestCells(f)[:10] {
		b, _ := json.Marshal(c)
		f.Add(b)
	}
	for _, s := range []string{`{"id":"a","index":1e2}`, `{"index":-0}`, `{"ID":"a"}`, `{"id":"a","id":"b"}`, `{"params":{}}`,
		`{"cases":[]}`, `{"argv":null}`, `{"params":{"a":"b","a":"c"}}`, `{"argv":["\u003c","\ud800","x\"y"]}`, "{\"name\":\"\xff\"}", `{} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := decodeCell(b, &jsonscan.Interner{})
		if !ok {
			return
		}
		var want Cell
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("decodeCell took %q, json.Unmarshal refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\ndecodeCell     %+v\njson.Unmarshal %+v", b, got, want)
		}
	})
}

// The reader's member list is Cell's JSON members, in order: a field
// added to Cell without its entry fails here, before any fuzzer runs.
func TestCellMembers(t *testing.T) {
	if err := jsonscan.CheckMembers(reflect.TypeFor[Cell](), cellMembers.Names()); err != nil {
		t.Error(err)
	}
}
