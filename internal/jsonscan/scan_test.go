package jsonscan

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// What each reader takes and what it leaves to encoding/json (the readers
// built on it are fuzzed against encoding/json in reports and sweep).
func TestReaders(t *testing.T) {
	read := func(doc string) string {
		in := &Interner{}
		s := New([]byte(doc), in)
		var out []string
		ok := s.Fields(0, func(key string, depth int) bool {
			var v any
			var ok bool
			switch {
			case strings.HasPrefix(key, "s"):
				v, ok = s.Str()
			case strings.HasPrefix(key, "i"):
				v, ok = s.Integer()
			case strings.HasPrefix(key, "b"):
				v, ok = s.Boolean()
			case strings.HasPrefix(key, "l"):
				v, ok = s.StrList(depth)
			case strings.HasPrefix(key, "m"):
				v, ok = s.StrMap(depth)
			default:
				v, ok = s.Value(depth)
			}
			out = append(out, fmt.Sprintf("%s=%v", key, v))
			return ok
		})
		if !ok || !s.Done() {
			return "gave up"
		}
		return strings.Join(out, " ")
	}
	for doc, want := range map[string]string{
		`{"s":"a","i":-3,"b":true,"l":["x"],"m":{"k":"v"},"t":{"n":1.5}}`: "s=a i=-3 b=true l=[x] m=map[k:v] t=map[n:1.5]",
		` { "s" : "\u00e9\n" } `:       "s=é\n",
		`{"l":[],"m":{}}`:              "l=[] m=map[]",
		`{"s":"a","\u0073":"b"}`:       "gave up", // the same key twice, spelled two ways
		`{"i":1.0}`:                    "gave up", // not a plain integer
		`{"i":1e2}`:                    "gave up",
		`{"s":null}`:                   "gave up",
		`{"b":"true"}`:                 "gave up",
		`{"m":{"k":"v","k":"w"}}`:      "gave up",
		`{"t":1e999}`:                  "gave up", // beyond a float64
		`{"s":"a"} x`:                  "gave up",
		`{"s":"a",}`:                   "gave up",
		`{"t":` + deep(MaxDepth) + `}`: "gave up",
	} {
		if got := read(doc); got != want {
			t.Errorf("%s: %q, want %q", doc, got, want)
		}
	}
}

func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// A plain key is a view of the document, a kept string is not: interned
// strings survive the document's bytes being changed.
func TestInternCopies(t *testing.T) {
	b := []byte(`{"k":"value"}`)
	in := &Interner{}
	s := New(b, in)
	var v string
	if !s.Fields(0, func(key string, _ int) bool { var ok bool; v, ok = s.Str(); return ok }) {
		t.Fatal("gave up")
	}
	copy(b, strings.Repeat("x", len(b)))
	if v != "value" || in.Intern([]byte("value")) != "value" {
		t.Fatalf("%q", v)
	}
}

// Strings that share a slot of the recent table, or differ only in the
// middle, each come back as themselves, and a repeated one as the same
// string.
func TestInternRecent(t *testing.T) {
	var words []string
	for i := 0; i < 2000; i++ {
		words = append(words, fmt.Sprintf("TC-%02d", i%100), fmt.Sprintf("m%dx", i), "ab"+strings.Repeat("c", i%70)+"d")
	}
	in := &Interner{}
	first := map[string]string{}
	for _, w := range words {
		got := in.Intern([]byte(w))
		if got != w {
			t.Fatalf("Intern(%q) = %q", w, got)
		}
		if f, ok := first[w]; ok && len(w) <= 64 && unsafe.StringData(f) != unsafe.StringData(got) {
			t.Fatalf("%q interned twice", w)
		}
		first[w] = got
	}
}

// The lists StrList reads through one interner's scratch are each their
// own: reading the next one changes none read before, and a list costs
// one allocation, however long.
func TestStrListScratch(t *testing.T) {
	in := &Interner{}
	list := func(doc string) []string {
		t.Helper()
		s := New([]byte(doc), in)
		l, ok := s.StrList(0)
		if !ok || !s.Done() {
			t.Fatalf("StrList(%s) failed", doc)
		}
		return l
	}
	first := list(`["python3", "sim.py", "--engine", "vllm", "--results-dir", "@CELL_DIR@", "--cases", "TC-01"]`)
	second := list(`["a", "b"]`)
	empty := list(`[]`)
	if got := fmt.Sprint(first, second); got != "[python3 sim.py --engine vllm --results-dir @CELL_DIR@ --cases TC-01] [a b]" {
		t.Fatalf("the lists read one after the other are %s", got)
	}
	if empty == nil || len(empty) != 0 {
		t.Fatalf("[] read as %#v, want an empty list that is not nil", empty)
	}
	if cap(second) != 2 {
		t.Errorf("a list of 2 has room for %d", cap(second))
	}
	doc := []byte(`["python3", "sim.py", "--engine", "vllm", "--results-dir", "@CELL_DIR@", "--cases", "TC-01"]`)
	if allocs := testing.AllocsPerRun(50, func() { s := New(doc, in); s.StrList(0) }); allocs != 1 {
		t.Errorf("a list of 8 interned words took %.0f allocations, want 1", allocs)
	}
}
