package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

// FuzzCollect writes fuzzed bytes as one cell's result.json, exit marker
// and source-revisions.json, among good cells, and collects. Collect must
// never fail or panic for a cell's content; every good cell stays OK; the
// fuzzed cell is OK only with a result that parses; and the run can always
// be written as results.json.
func FuzzCollect(f *testing.F) {
	m, err := sweep.ReadManifest("testdata/base")
	if err != nil {
		f.Fatal(err)
	}
	victim := m.Cells[1].ID
	good, err := os.ReadFile("testdata/base/cells/" + victim + "/result.json")
	if err != nil {
		f.Fatal(err)
	}
	marker := []byte(`{"exit_code": 0, "signal": "", "started": "2026-12-02T15:36:21Z", "finished": "2026-12-02T15:36:22Z", "job_id": "1", "array_job_id": "1", "array_task_id": "0", "host": "h"}`)
	revs, err := os.ReadFile("testdata/base/cells/" + victim + "/source-revisions.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, marker, revs)
	f.Add(bytes.Replace(good, []byte(`"value": `), []byte(`"value": 1e999, "x": `), 1), marker, revs)
	f.Add(bytes.Replace(good, []byte(`"verdict": "PASS"`), []byte(`"verdict": "PASS", "verdict": "FAIL"`), 1), marker, revs)
	f.Add(good[:len(good)/2], marker[:10], revs[:5])
	f.Add([]byte(`{"schema_version": 1, "cell_id": "x", "cases": [{"id": "TC-01", "verdict": "PASS", "metrics": {"m": {"value": -0}}}]}`), []byte(`{}`), []byte(`[]`))

	base := f.TempDir()
	src := filepath.Join(base, "src")
	if err := os.CopyFS(src, os.DirFS("testdata/base")); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, result, exit, revisions []byte) {
		cell := filepath.Join(src, "cells", victim)
		for name, b := range map[string][]byte{"result.json": result, "exit": exit, "source-revisions.json": revisions} {
			if err := os.WriteFile(filepath.Join(cell, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run, err := Collect(src, CollectOptions{Workers: 2})
		if err != nil {
			t.Fatalf("one cell's content failed the whole collection: %v", err)
		}
		for i, c := range run.Cells {
			if i != 1 && c.Outcome != OK {
				t.Fatalf("good cell %s: %s %s", c.Name, c.Outcome, c.Detail)
			}
		}
		if c := run.Cells[1]; c.Outcome == OK {
			if _, err := ParseResult(result); err != nil {
				t.Fatalf("cell OK although its result does not parse: %v", err)
			}
		} else if c.Detail == "" {
			t.Fatalf("cell %s without a reason", c.Outcome)
		}
		// What WriteRun writes as results.json (without its fsync, which
		// would make the fuzzer measure the disk).
		if _, err := json.Marshal(run); err != nil {
			t.Fatalf("results.json cannot be written: %v", err)
		}
	})
}

// FuzzFastDecode holds fastDecode to the reference decoder: whenever it
// accepts a document, the reference accepts it too with an equal tree.
func FuzzFastDecode(f *testing.F) {
	good, err := os.ReadFile("testdata/base/cells/" + mustFirstCell(f) + "/result.json")
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
	m, err := sweep.ReadManifest("testdata/base")
	if err != nil {
		f.Fatal(err)
	}
	return m.Cells[0].ID
}

// Every committed result.json the reference decodes, fastDecode decodes:
// the fast path is the one taken, not a fallback in disguise.
func TestFastDecodeTakesTheResults(t *testing.T) {
	files, _ := filepath.Glob("testdata/*/cells/*/result.json")
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
