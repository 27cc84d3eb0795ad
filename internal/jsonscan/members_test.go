package jsonscan

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type pair struct {
	A string `json:"a"`
	B string `json:"b,omitempty"`
	//lint:ignore U1000 an unexported field, which CheckMembers must skip
	skip string
	C    int `json:"-"`
}

var pairMembers = Members[pair]{
	M("a", func(s *Scanner, p *pair, _ int) (ok bool) { p.A, ok = s.Str(); return },
		func(b []byte, p *pair) ([]byte, bool) { return AppendStr(Key(b, "a"), p.A), true }),
	M("b", func(s *Scanner, p *pair, _ int) (ok bool) { p.B, ok = s.Str(); return },
		func(b []byte, p *pair) ([]byte, bool) { return AppendOptStr(b, "b", p.B), true }),
}

// A member list reads and writes as encoding/json does, in any order of
// members, and gives up on a member it does not list or one given twice.
func TestMembers(t *testing.T) {
	for _, p := range []pair{{A: "x", B: "y"}, {A: "x"}, {}} {
		want, _ := json.Marshal(p)
		got, ok := pairMembers.Append(nil, &p)
		if !ok || string(got) != string(want) {
			t.Errorf("Append(%+v) = %s, %v; want %s", p, got, ok, want)
		}
	}
	for doc, want := range map[string]pair{`{"b":"y","a":"x"}`: {A: "x", B: "y"}, `{"a":"x"}`: {A: "x"}} {
		var got pair
		s := New([]byte(doc), nil)
		if !pairMembers.Read(&s, &got, 0) || got != want {
			t.Errorf("Read(%s) = %+v; want %+v", doc, got, want)
		}
	}
	for _, doc := range []string{`{"a":"x","c":1}`, `{"a":"x","a":"z"}`} {
		var p pair
		s := New([]byte(doc), nil)
		if pairMembers.Read(&s, &p, 0) {
			t.Errorf("Read took %s: a member the list does not have, or one twice", doc)
		}
	}
}

// CheckMembers fails a list that misses a field, or lists them in
// another order than the struct's.
func TestCheckMembers(t *testing.T) {
	typ := reflect.TypeFor[pair]()
	if err := CheckMembers(typ, pairMembers.Names()); err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]string{{"a"}, {"b", "a"}, {"a", "b", "c"}} {
		if err := CheckMembers(typ, names); err == nil || !strings.Contains(err.Error(), "needs its entry") {
			t.Errorf("CheckMembers(%v) = %v", names, err)
		}
	}
}
