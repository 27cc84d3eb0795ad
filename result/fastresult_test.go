package result

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fastResultSchema is the sha256 of schema/result.v1.json that fastResult
// implements. A change of the schema fails TestFastResultSchemaUnchanged
// until fastResult checks the new constraints too (and this is updated).
const fastResultSchema = "cbeb56a0ee1c3267c42a97512108e609e5cdc983b8082f6b4b33ce56d42486c6"

func TestFastResultSchemaUnchanged(t *testing.T) {
	sum := sha256.Sum256(schemaJSON)
	if got := hex.EncodeToString(sum[:]); got != fastResultSchema {
		t.Fatalf("schema/result.v1.json changed (sha256 %s): make fastResult (fastresult.go) check what the schema now says, run FuzzFastResult, then update fastResultSchema", got)
	}
}

// fastResultSeeds are documents around every constraint of the schema,
// valid and not.
func fastResultSeeds(t testing.TB) [][]byte {
	files, _ := filepath.Glob(sweeps + "*/cells/*/result.json")
	var seeds [][]byte
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	const head = `{"schema_version": 1, "cell_id": "0123456789ab", `
	for _, s := range []string{
		`"cases": []}`,
		`"cases": [], "x": {"y": [1, {"z": null}]}}`,
		`"cases": [], "x": 1, "x": 2}`,
		`"cases": [], "cases": []}`,
		`"cases": [{"id": "TC-01", "verdict": "PASS", "duration_s": -0, "message": "m", "extra": [1]}]}`,
		`"cases": [{"id": "TC-01", "verdict": "PASS", "duration_s": -0.001}]}`,
		`"cases": [{"id": "TC 01", "verdict": "PASS"}]}`,
		`"cases": [{"id": "", "verdict": "PASS"}]}`,
		`"cases": [{"id": "TC-01", "verdict": "pass"}]}`,
		`"cases": [{"id": "TC-01"}]}`,
		`"cases": [{"id": "TC-01", "verdict": "FAIL", "metrics": {}}]}`,
		`"cases": [{"id": "TC-01", "verdict": "FAIL", "metrics": {"m": {"value": 1e3, "unit": "ms", "direction": "lower"}}}]}`,
		`"cases": [{"id": "TC-01", "verdict": "FAIL", "metrics": {"m": {"value": 1, "other": 2}}}]}`,
		`"cases": [{"id": "TC-01", "verdict": "FAIL", "metrics": {"m": {"unit": "ms"}}}]}`,
		`"cases": [{"id": "TC-01", "verdict": "FAIL", "metrics": {"m": {"value": 1, "direction": "up"}}}]}`,
		`"cases": [{"id": "TC-01", "verdict": "FAIL", "metrics": {"m": {"value": "1"}}}]}`,
		`"cases": [{"id": "TC-01", "verdict": "FAIL", "metrics": {"m": {"value": 1}, "m": {"value": 2}}}]}`,
		`"cases": {}}`,
		`"cases": [], "params": {"a": "x", "b": 1.5, "c": true, "d": false}}`,
		`"cases": [], "params": {"a": null}}`,
		`"cases": [], "params": {"a": [1]}}`,
		`"cases": [], "params": {}}`,
		`"cases": [], "image": {"ref": "r", "digest": ""}}`,
		`"cases": [], "image": {"ref": "r", "digest": "sha256:` + strings.Repeat("a", 64) + `"}}`,
		`"cases": [], "image": {"digest": "sha256:` + strings.Repeat("A", 64) + `"}}`,
		`"cases": [], "image": {"digest": "sha256:abc"}}`,
		`"cases": [], "image": {"source_revisions": {"schema_version": 1, "components": {}}}}`,
		`"cases": [], "image": {"source_revisions": []}}`,
		`"cases": [], "image": {"source_revisions": {"a": 1, "a": 1}}}`,
		`"cases": [], "slurm": {"job_id": "1", "exit_code": 3, "nodes": "n1", "other": {}}}`,
		`"cases": [], "slurm": {"exit_code": 3.0}}`,
		`"cases": [], "slurm": {"exit_code": 1e2}}`,
		`"cases": [], "slurm": {"exit_code": -1}}`,
		`"cases": [], "slurm": {"exit_code": 1.5}}`,
		`"cases": [], "slurm": {"exit_code": 9007199254740993}}`,
		`"cases": [], "slurm": {"exit_code": 123456789012345678901234}}`,
		`"cases": [], "slurm": {"job_id": 1}}`,
		`"cases": [], "started": "2026-12-03T10:00:00Z", "finished": "2026-12-03T10:00:00.123+01:00"}`,
		`"cases": [], "started": "2026-12-03t10:00:00z"}`,
		`"cases": [], "started": "2026-02-30T10:00:00Z"}`,
		`"cases": [], "started": "2024-02-29T23:59:60Z"}`,
		`"cases": [], "started": "2024-02-29T10:59:60Z"}`,
		`"cases": [], "started": "2026-12-03T24:00:00Z"}`,
		`"cases": [], "started": "2026-12-03T10:00:00+24:00"}`,
		`"cases": [], "started": "2026-12-03T10:00:00."}`,
		`"cases": [], "started": "2026-12-03 10:00:00Z"}`,
		`"cases": [], "started": "+026-12-03T10:00:00Z"}`,
		`"cases": [], "evidence": ["logs/a.txt", "a/..b"]}`,
		`"cases": [], "evidence": ["/etc/passwd"]}`,
		`"cases": [], "evidence": ["a/../b"]}`,
		`"cases": [], "evidence": [".."]}`,
		`"cases": [], "evidence": [""]}`,
		`"cases": [], "evidence": []}`,
		`"cases": [], "sweep_id": "s", "\u0063ell_id": "0123456789ab"}`,
		`"cases": [], "sweep_id": "\u00e9\ud83d\ude00"}`,
		"\"cases\": [], \"sweep_id\": \"\xff\"}",
	} {
		seeds = append(seeds, []byte(head+s))
	}
	for _, s := range []string{
		`{"schema_version": 1.0, "cell_id": "0123456789ab", "cases": []}`,
		`{"schema_version": 2, "cell_id": "0123456789ab", "cases": []}`,
		`{"schema_version": 1, "cell_id": "0123456789AB", "cases": []}`,
		`{"schema_version": 1, "cell_id": "0123456789abc", "cases": []}`,
		`{"schema_version": 1, "cases": []}`,
		`{"cell_id": "0123456789ab", "cases": []}`,
		`{"schema_version": 1, "cell_id": "0123456789ab", "cases": []} x`,
		`[]`, `null`, ``,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// FuzzFastResult holds fastResult to the reference: whenever it accepts a
// document, the reference accepts it too and decodes the same Result.
func FuzzFastResult(f *testing.F) {
	for _, b := range fastResultSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := fastResult(b, &Scratch{})
		if !ok {
			return // the reference decides
		}
		ref, err := parseResultRef(b)
		if err != nil {
			t.Fatalf("fastResult accepted %q, the reference refused it: %v", b, err)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("%q:\nfastResult %#v\nreference  %#v", b, fast, ref)
		}
	})
}

// The seeds the reference accepts, fastResult accepts too (but for the
// few it leaves to the reference on purpose): the fast path is the one
// taken, not a fallback in disguise.
func TestFastResultTakesTheResults(t *testing.T) {
	leftToRef := []string{`"exit_code": 3.0`, `"exit_code": 1e2`, `"exit_code": 9007199254740993`, `"exit_code": 123456789012345678901234`, `t10:00:00z`, `T23:59:60Z`}
	accepted := 0
	for _, b := range fastResultSeeds(t) {
		if _, err := parseResultRef(b); err != nil {
			if _, ok := fastResult(b, &Scratch{}); ok {
				t.Errorf("fastResult accepted %q, the reference refused it: %v", b, err)
			}
			continue
		}
		accepted++
		if _, ok := fastResult(b, &Scratch{}); !ok && !containsAny(string(b), leftToRef) {
			t.Errorf("the reference accepts %q, fastResult gave up", b)
		}
	}
	if accepted < 30 {
		t.Fatalf("only %d seeds are valid results", accepted)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// A parsed result keeps nothing of the bytes it was read from: collect
// reads every result.json of a worker into one buffer.
func TestResultOutlivesItsBytes(t *testing.T) {
	for _, seed := range fastResultSeeds(t) {
		want, wantErr := new(Scratch).Parse(bytes.Clone(seed))
		b := bytes.Clone(seed)
		got, err := new(Scratch).Parse(b)
		var msg string
		if err != nil {
			msg = err.Error()
		}
		for i := range b {
			b[i] = 'x'
		}
		if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != msg) {
			t.Errorf("%q: after its bytes were overwritten:\n%#v %v\nwant %#v %v", seed, got, err, want, wantErr)
		}
	}
}
