package testrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

func TestMixedOutcomes(t *testing.T) {
	run := collected(t, "mixed")
	want := map[string]string{
		"vllm-aggregated-qwen3.5-4b-sim-pass":            OK,
		"vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04": OK,
		"vllm-aggregated-qwen3.5-4b-sim-exit-3":          HarnessFailed,
		"vllm-aggregated-qwen3.5-4b-sim-no-result":       Missing,
		"vllm-aggregated-qwen3.5-4b-sim-garbage":         Invalid,
		"vllm-aggregated-qwen3.5-4b-sim-sleep-30":        Missing,
	}
	for _, c := range run.Cells {
		if c.Outcome != want[c.Name] {
			t.Errorf("%s: %s (%s), want %s", c.Name, c.Outcome, c.Detail, want[c.Name])
		}
		if c.Name == "vllm-aggregated-qwen3.5-4b-sim-sleep-30" && c.State != scheduler.StateTimeout {
			t.Errorf("timed-out cell: state %q, want TIMEOUT", c.State)
		}
	}
	if run.Complete() {
		t.Error("a run with missing cells is complete")
	}
}

// Each corrupt result gets its outcome and message; the others are
// collected all the same.
func TestCorruptInputs(t *testing.T) {
	dir := sweeptest.Copy(t, "mixed")
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, c := range m.Cells {
		byName[c.Name] = filepath.Join(dir, "cells", c.ID, "result.json")
	}
	okCell := byName["vllm-aggregated-qwen3.5-4b-sim-pass"]
	good, err := os.ReadFile(okCell)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.json")
	if err := os.WriteFile(outside, good, 0o644); err != nil {
		t.Fatal(err)
	}
	other := strings.TrimSuffix(filepath.Base(filepath.Dir(okCell)), "")
	corrupt := map[string]func(path string){
		"vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04": func(p string) { sweeptest.Must(t, os.WriteFile(p, good[:len(good)/2], 0o644)) },
		"vllm-aggregated-qwen3.5-4b-sim-exit-3":          func(p string) { sweeptest.Must(t, os.WriteFile(p, []byte{0x00, 0xff, 0x13, 0x37, 0x89}, 0o644)) },
		"vllm-aggregated-qwen3.5-4b-sim-no-result": func(p string) {
			f, err := os.Create(p)
			sweeptest.Must(t, err)
			sweeptest.Must(t, f.Truncate(100<<20)) // a 100 MiB file
			f.Close()
		},
		"vllm-aggregated-qwen3.5-4b-sim-garbage": func(p string) {
			sweeptest.Must(t, os.WriteFile(p, bytes.Replace(good, []byte(`"schema_version": 1`), []byte(`"schema_version": 7`), 1), 0o644))
		},
		"vllm-aggregated-qwen3.5-4b-sim-sleep-30": func(p string) {
			sweeptest.Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			sweeptest.Must(t, os.Symlink(outside, p))
		},
	}
	for name, f := range corrupt {
		_ = os.Remove(byName[name])
		f(byName[name])
	}
	// A result without cases, and one that names another cell.
	extra := sweeptest.Copy(t, "mixed")
	_ = extra
	run, err := Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"vllm-aggregated-qwen3.5-4b-sim-pass":            {OK, ""},
		"vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04": {Invalid, "result.json: not JSON: unexpected EOF"},
		"vllm-aggregated-qwen3.5-4b-sim-exit-3":          {Invalid, "result.json: not JSON: invalid character"},
		"vllm-aggregated-qwen3.5-4b-sim-no-result":       {Invalid, "result.json is 100.0 MiB, over the 16.0 MiB limit (--max-result-size)"},
		"vllm-aggregated-qwen3.5-4b-sim-garbage":         {Invalid, "result.json: at /schema_version: version 7 is not supported (expected 1)"},
		"vllm-aggregated-qwen3.5-4b-sim-sleep-30":        {Invalid, "result.json is a link to " + outside + ", outside the sweep directory"},
	}
	for _, c := range run.Cells {
		w := want[c.Name]
		if c.Outcome != w[0] || !strings.HasPrefix(c.Detail, w[1]) {
			t.Errorf("%s: %s %q, want %s %q", c.Name, c.Outcome, c.Detail, w[0], w[1])
		}
	}
	_ = other

	// Missing required fields, and a result that names another cell.
	sweeptest.Must(t, os.WriteFile(byName["vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04"], []byte(`{"schema_version": 1, "cell_id": "0123456789ab"}`), 0o644))
	dup := bytes.Replace(good, []byte(filepath.Base(filepath.Dir(okCell))), []byte(filepath.Base(filepath.Dir(byName["vllm-aggregated-qwen3.5-4b-sim-exit-3"]))), 1)
	sweeptest.Must(t, os.WriteFile(okCell, dup, 0o644))
	run, err = Collect(dir, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range run.Cells {
		switch c.Name {
		case "vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04":
			if c.Outcome != Invalid || c.Detail != "result.json: at /: required property 'cases' is missing" {
				t.Errorf("missing field: %s %q", c.Outcome, c.Detail)
			}
		case "vllm-aggregated-qwen3.5-4b-sim-pass":
			if c.Outcome != Invalid || !strings.Contains(c.Detail, "but it is in the directory of cell") {
				t.Errorf("duplicate cell id: %s %q", c.Outcome, c.Detail)
			}
		}
	}
}
