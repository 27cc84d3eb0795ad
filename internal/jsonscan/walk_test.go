package jsonscan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The walker notes where every value starts by its pointer, in the
// whole file where the document starts at Base, and leaves a pointer
// past MaxPointer, and what is under it, unnoted.
func TestWalkerPlaces(t *testing.T) {
	src := `{"a": [1, {"b~/c": true}], "` + strings.Repeat("k", 20) + `": {"x": 1}}`
	w := Walker{Places: map[string]int{}, MaxPointer: 16, Base: 100}
	w.Start([]byte(src))
	if _, err := w.Value(); err != nil || !w.End() {
		t.Fatal(err)
	}
	for ptr, want := range map[string]string{"/a": "[1", "/a/0": "1,", "/a/1/b~0~1c": "true"} {
		at, ok := w.Places[ptr]
		if !ok {
			t.Errorf("%s: not noted", ptr)
			continue
		}
		if got := strings.TrimLeft(src[at-100:], " :,"); !strings.HasPrefix(got, want) {
			t.Errorf("%s: at %q, want %q", ptr, got[:min(len(got), 8)], want)
		}
	}
	for ptr := range w.Places {
		if len(ptr) > 16 {
			t.Errorf("%s: noted past MaxPointer", ptr)
		}
	}
}

// Strict, it refuses a key twice, a number past a float and nesting past
// its bound, each at its pointer; not strict, the last key wins and the
// number is left to the reader.
func TestWalkerStrict(t *testing.T) {
	for src, want := range map[string]string{
		`{"a": {"b": 1, "b": 2}}`:           `at /a: key "b" occurs twice in one object`,
		`{"a": [1e400]}`:                    "at /a/0: 1e400 is out of the range of a 64-bit number",
		strings.Repeat("[", 65) + "]":       "at " + strings.Repeat("/0", 64) + ": nested more than 64 deep",
		`{"a": 1} {}`:                       "not JSON: data after the document",
		`{"a": tru}`:                        "not JSON: invalid character",
		strings.Repeat("[", 65)[:64] + "1]": "not JSON: ",
	} {
		_, err := WalkTree([]byte(src))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%.30s: %v, want %q", src, err, want)
		}
	}
	w := Walker{}
	w.Start([]byte(`{"b": 1, "b": 1e400}`))
	v, err := w.Value()
	if err != nil || v.(map[string]any)["b"] != json.Number("1e400") {
		t.Errorf("not strict: %v %v", v, err)
	}
	var pe *PointerError
	if _, err := WalkTree([]byte(`{"a": {"b": 1, "b": 2}}`)); !errors.As(err, &pe) || pe.At != 15 {
		t.Errorf("the second key's offset: %+v", pe)
	}
}

// Locate finds a value's line and column, even in a document that does
// not read past it; String reads a stand-in as another value.
func TestLocateAndString(t *testing.T) {
	src := []byte("{\n  \"cases\": [\n    {\"id\": 7}\n  ], \"x\": ")
	if l, c, ok := Locate(src, "/cases/0/id"); !ok || l != 3 || c != 12 {
		t.Errorf("/cases/0/id: %d:%d %v, want 3:12", l, c, ok)
	}
	if _, _, ok := Locate(src, "/nothing"); ok {
		t.Error("/nothing found")
	}
	w := Walker{String: func(s string, end int) (any, bool) { return len(s), s == "swap" && end == 12 }}
	w.Start([]byte(`{"a": "swap", "b": "swap"}`))
	v, err := w.Value()
	if m := v.(map[string]any); err != nil || m["a"] != 4 || m["b"] != "swap" {
		t.Errorf("String: %v %v", v, err)
	}
}
