package jsonsplit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"testing"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

type item struct {
	ID   string            `json:"id"`
	N    int               `json:"n,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
}

type doc struct {
	Name  string   `json:"name"`
	Cells []item   `json:"cells"`
	After []string `json:"after,omitempty"`
}

var seeds = []string{
	`{"name":"a","cells":[{"id":"x","n":1},{"id":"y]\"}","tags":{"k":"v"}}],"after":["z"]}`,
	`{"name":"a","cells":[]}`, `{"name":"a","cells":null}`, `{"cells":[{"id":"x"}],"cells":[]}`,
	`{"name":"a"}`, `{"cells":[{"id":1}]}`, `{"cells":[{} {}]}`, `{"cells":[,]}`, `{"cells":[]} x`,
	`{"Cells":[{"ID":"x"}]}`, `{"c\u0065lls":[{"id":"x"}]}`, `[]`, `{"cells":[1 2]}`, `{"cells":[nul]}`,
	` { "name" : "a" , "cells" : [ { "id" : "x" } , { "id" : "y" } ] } `, `{"cells":[{"id":"x"}],"n":tru}`,
	`{"cells":[{"id":"x"}],"name":1e5}`, `{"cells":nullx}`, `{"cells":[{"id":"\ud800"}]}`,
	`{"cells":[{"id":"a"}],"CELLS":[{"id":"b"}]}`, `{"cells":[{"id":"a"}],"cellſ":[{"id":"b"}]}`,
}

// Unmarshal gives what json.Unmarshal gives, whenever it does not leave
// the document to it.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParts(t, b)
		var got doc
		if !Unmarshal(b, "cells", &got, &got.Cells, plain) {
			return
		}
		var want doc
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: split and decoded, json.Unmarshal refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %+v, json.Unmarshal %+v", b, got, want)
		}
	})
}

// The documents kvsweep writes split: the parallel path is the one taken.
func TestUnmarshalSplits(t *testing.T) {
	for _, s := range []string{seeds[0], seeds[1], seeds[2], seeds[14]} {
		var got doc
		if !Unmarshal([]byte(s), "cells", &got, &got.Cells, plain) {
			t.Errorf("%s did not split", s)
		}
	}
	var big doc
	for i := 0; i < 1000; i++ {
		big.Cells = append(big.Cells, item{ID: string(rune('a' + i%26)), N: i})
	}
	b, _ := json.MarshalIndent(big, "", "  ")
	var got doc
	if !Unmarshal(b, "cells", &got, &got.Cells, plain) || !reflect.DeepEqual(got, big) {
		t.Fatal("1,000 cells did not come back as they were")
	}
}

// checkParts holds parallel to what one pass over the cells array of b
// gives, for every array of b and a part count from 2 to 4, whenever it
// takes its guesses.
func checkParts(t *testing.T, b []byte) {
	t.Helper()
	for open := bytes.IndexByte(b, '['); open >= 0; {
		s := jsonscan.New(b, nil)
		s.Seek(open)
		one, oneOK := elementsInOnePass(&s)
		for k := 2; k <= 4; k++ {
			elems, end, ok := parallel(b, open, k)
			if !ok {
				continue
			}
			if !oneOK || end != s.Pos() || !reflect.DeepEqual(elems, one) {
				t.Fatalf("%q at %d in %d parts: %q ending at %d; one pass: %q ending at %d (ok %v)", b, open, k, elems, end, one, s.Pos(), oneOK)
			}
		}
		next := bytes.IndexByte(b[open+1:], '[')
		if next < 0 {
			break
		}
		open += 1 + next
	}
}

// elementsInOnePass is elements without the parts.
func elementsInOnePass(s *jsonscan.Scanner) ([][]byte, bool) {
	defer func(was int) { parallelFrom = was }(parallelFrom)
	parallelFrom = math.MaxInt
	return elements(s, nil)
}

// The documents kvsweep writes are cut into parts: results.json (cells
// without blanks) and manifest.json (indented), with cells whose strings
// hold what the guesses look for.
func TestPartsOfWrittenDocuments(t *testing.T) {
	var big doc
	for i := 0; i < 1000; i++ {
		big.Cells = append(big.Cells, item{ID: fmt.Sprintf(`,{"id":%d`, i), N: i, Tags: map[string]string{"k": "],\n    {"}})
	}
	compact, _ := json.Marshal(big)
	indented, _ := json.MarshalIndent(big, "", "  ")
	for _, b := range [][]byte{compact, indented} {
		open := bytes.IndexByte(b, '[')
		for k := 2; k <= 8; k++ {
			elems, _, ok := parallel(b, open, k)
			if !ok || len(elems) != len(big.Cells) {
				t.Fatalf("%.40s...: %d parts not taken (ok %v, %d elements)", b, k, ok, len(elems))
			}
		}
		checkParts(t, b)
		defer func(was int) { parallelFrom = was }(parallelFrom)
		parallelFrom = 0
		var got doc
		if !Unmarshal(b, "cells", &got, &got.Cells, plain) || !reflect.DeepEqual(got, big) {
			t.Fatalf("%.40s...: did not come back as it was", b)
		}
	}
}

// A guess that is not an element's start is not taken: the cells array
// here holds, deeper down, objects that start like its elements.
func TestPartsGuessWrong(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"cells":[{"id":"a"},{"id":"b","tags":[`)
	for i := 0; i < 100; i++ {
		b.WriteString(`{"id":"x"},`)
	}
	b.WriteString(`{"id":"x"}]},{"id":"c"}]}`)
	open := bytes.IndexByte(b.Bytes(), '[')
	// The premise: past the middle, the mark is found only inside the
	// second element, so the guess for the second part is made there.
	doc, mid := b.Bytes(), b.Len()/2
	if at := bytes.Index(doc[mid:], []byte(`,{"id":`)); at < 0 || mid+at > bytes.LastIndex(doc, []byte(`]},{"id":"c"}`)) {
		t.Fatal("the document does not put the guess inside an element")
	}
	if _, _, ok := parallel(b.Bytes(), open, 2); ok {
		t.Fatal("a guess inside an element was taken")
	}
	checkParts(t, b.Bytes())
}

// plain decodes elements with encoding/json.
func plain() func([]byte, *item) error {
	return func(b []byte, it *item) error { return json.Unmarshal(b, it) }
}

func TestSpans(t *testing.T) {
	for _, c := range []struct{ n, k int }{{0, 2}, {1, 2}, {5, 2}, {10, 3}, {3, 8}} {
		got := spans(c.n, c.k)
		next := 0
		for _, s := range got {
			if s[0] != next || s[1] < s[0] {
				t.Fatalf("spans(%d, %d) = %v", c.n, c.k, got)
			}
			next = s[1]
		}
		if next != c.n || len(got) > max(1, c.k) {
			t.Fatalf("spans(%d, %d) = %v", c.n, c.k, got)
		}
	}
}

// A large decode collects garbage less often while it runs, and leaves
// the collector as it found it, also when decodes overlap.
func TestBulkRestores(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	r1 := bulk()
	if got := debug.SetGCPercent(bulkGC); got != bulkGC {
		t.Fatalf("during a decode: %d%%, want %d%%", got, bulkGC)
	}
	r2 := bulk()
	r1()
	if got := debug.SetGCPercent(bulkGC); got != bulkGC {
		t.Fatalf("while a second decode runs: %d%%, want %d%%", got, bulkGC)
	}
	r2()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after: %d%%, want 100%%", got)
	}
	debug.SetGCPercent(-1)
	bulk()()
	if got := debug.SetGCPercent(100); got != -1 {
		t.Fatalf("GOGC=off became %d%%", got)
	}
}
