package testrun

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvsweep/kvsweep/result"
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
	f.Fuzz(func(t *testing.T, res, exit, revisions []byte) {
		cell := filepath.Join(src, "cells", victim)
		for name, b := range map[string][]byte{"result.json": res, "exit": exit, "source-revisions.json": revisions} {
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
			if _, err := result.ParseResult(res); err != nil {
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
