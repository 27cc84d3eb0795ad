package jsonsplit

import (
	"encoding/json"
	"reflect"
	"testing"
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
