package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// cellFiles writes files into cells/ID of a new sweep directory and
// opens the cell as collect does.
func cellFiles(t *testing.T, files map[string]string) *sweep.CellFiles {
	t.Helper()
	dir := t.TempDir()
	cell := filepath.Join(dir, sweep.CellsDir, "0123456789ab")
	if err := os.MkdirAll(cell, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(cell, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	cells := sweep.OpenCells(root, dir)
	f := cells.Open("0123456789ab")
	t.Cleanup(func() { f.Close(); cells.Close(); root.Close() })
	return f
}

// Read takes result.json where the harness wrote one, the file the spec
// names where it did not, and says which file is missing where neither
// is there; each reader's errors name it and the place.
func TestRead(t *testing.T) {
	c := sweep.Cell{ID: "0123456789ab", Cases: []string{"TC-01"}}
	native := Spec{Native: &sweep.NativeResult{File: "native.json", Cases: map[string]sweep.NativeCase{"*": {Verdict: "/tests/{case}/status"}}}}
	client := Spec{Client: &sweep.ClientResult{Format: VLLMBench, File: "bench.json"}}
	resultJSON := `{"schema_version": 1, "cell_id": "0123456789ab", "cases": [{"id": "TC-01", "verdict": "FAIL"}]}`
	for _, tc := range []struct {
		name    string
		files   map[string]string
		spec    Spec
		verdict string // of TC-01, when it reads
		missing string // MissingError's File, when none is there ("-": no file named)
		err     string // the error's text, when it does not read
	}{
		{name: "result.json", files: map[string]string{sweep.ResultFile: resultJSON}, verdict: result.Fail},
		{name: "result.json first", files: map[string]string{sweep.ResultFile: resultJSON, "native.json": `{"tests": {"TC-01": {"status": "passed"}}}`}, spec: native, verdict: result.Fail},
		{name: "native", files: map[string]string{"native.json": `{"tests": {"TC-01": {"status": "passed"}}}`}, spec: native, verdict: result.Pass},
		{name: "client", files: map[string]string{"bench.json": `{"completed": 8, "failed": 0}`}, spec: client, verdict: result.Pass},
		{name: "nothing", missing: "-"},
		{name: "no native file", spec: native, missing: "native.json"},
		{name: "no client file", spec: client, missing: "bench.json"},
		{name: "bad result.json", files: map[string]string{sweep.ResultFile: `{"schema_version": 1,}`}, err: "result.json: not JSON: "},
		{name: "bad native", files: map[string]string{"native.json": `{"tests": {"TC-01": {"status": "maybe"}}}`}, spec: native, err: `native result native.json: TC-01: verdict at /tests/TC-01/status: "maybe" is not a verdict`},
		{name: "bad client", files: map[string]string{"bench.json": `{"completed": 8, "mean_ttft_ms": "fast"}`}, spec: client, err: `vllm-bench result: bench.json:1:34: /mean_ttft_ms: expected a number, got the string "fast"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rd Reader
			r, err := rd.Read(cellFiles(t, tc.files), c, tc.spec, 1<<20)
			var missing *MissingError
			switch {
			case tc.missing != "":
				if !errors.As(err, &missing) || missing.File != strings.TrimPrefix(tc.missing, "-") {
					t.Errorf("got %v, want none of the files (%s)", err, tc.missing)
				}
			case tc.err != "":
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Errorf("got %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case len(r.Cases) != 1 || r.Cases[0].Verdict != tc.verdict || r.CellID != "0123456789ab":
				t.Errorf("got %+v, want TC-01 %s of cell 0123456789ab", r, tc.verdict)
			}
		})
	}
}
