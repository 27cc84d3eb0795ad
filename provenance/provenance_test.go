package provenance

import (
	"strings"
	"testing"
)

const good = `{"schema_version": 1,
 "components": {
  "dynamo": {"repo": "r", "ref": "v1", "commit": "5f3a1c09b2e4d7a8c6b5e4f3a2b1c0d9e8f7a6b5", "dirty": false},
  "kvcr": {"commit": "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d", "dirty": true}},
 "base": {"name": "b:v1", "digest": "sha256:00"}}`

func TestParse(t *testing.T) {
	s, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Short(); got != "dynamo@5f3a1c0 kvcr@9e8d7c6+dirty" {
		t.Errorf("Short: %q", got)
	}
	if s.Commit("dynamo") != "5f3a1c09b2e4d7a8c6b5e4f3a2b1c0d9e8f7a6b5" || s.Commit("nope") != "" {
		t.Errorf("Commit: %q", s.Commit("dynamo"))
	}
	for in, want := range map[string]string{
		`{"schema_version": 2, "components": {"a": {"commit": "x"}}}`:    "schema_version 2 is not supported",
		`{"schema_version": 1, "components": {}}`:                        "no components",
		`{"schema_version": 1, "components": {"a": {"ref": "v1"}}}`:      `component "a" has no commit`,
		`{"dynamo": {"commit": "x"}}`:                                    "schema_version 0 is not supported",
		`{"schema_version": 1, "components": {"a": {"commit": "x"}}} {}`: "data after the JSON object",
		strings.Repeat(" ", MaxSize+1):                                   "over the",
		`[1]`:                                                            "cannot unmarshal",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: got %v, want an error with %q", in, err, want)
		}
	}
}

func TestCompare(t *testing.T) {
	got, _ := Parse([]byte(good))
	want, _ := Parse([]byte(good))
	if ms := Compare(got, want); len(ms) != 0 {
		t.Fatalf("identical records differ: %v", ms)
	}
	c := want.Components["dynamo"]
	c.Commit = "1111111111111111111111111111111111111111"
	want.Components["dynamo"] = c
	want.Base.Digest = "sha256:11"
	ms := Compare(got, want)
	if len(ms) != 2 || ms[0].Component != "dynamo" || ms[1].Component != "base" {
		t.Fatalf("got %v, want dynamo and base", ms)
	}
	if !strings.Contains(ms[0].String(), "the image has 5f3a1c09b2e4d7a8c6b5e4f3a2b1c0d9e8f7a6b5, the pins resolve to 1111") {
		t.Errorf("message: %s", ms[0])
	}
	if ms := Compare(nil, want); len(ms) != 1 || ms[0].Image != "missing" {
		t.Errorf("a missing record: %v", ms)
	}
}
