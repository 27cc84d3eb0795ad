package sweep

import (
	"reflect"
	"strings"
	"testing"
)

func TestIndicesRoundTrip(t *testing.T) {
	for _, idx := range [][]int{{0}, {0, 1, 2, 3, 7, 9, 10}, {5}, {1, 3, 5}} {
		s := FormatIndices(idx)
		back, err := ParseIndices(s)
		if err != nil || !reflect.DeepEqual(back, idx) {
			t.Errorf("%v -> %q -> %v %v", idx, s, back, err)
		}
	}
	if got := FormatIndices([]int{0, 1, 2, 3, 7, 9, 10}); got != "0-3,7,9-10" {
		t.Errorf("got %q", got)
	}
}

// A hostile journal line cannot make ParseIndices allocate without bound.
func TestParseIndicesBounded(t *testing.T) {
	_, err := ParseIndices("0-999999999999")
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("got %v, want a refusal naming the limit", err)
	}
}
