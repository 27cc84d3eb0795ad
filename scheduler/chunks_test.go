package scheduler

import (
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

func TestChunks(t *testing.T) {
	cs := chunks([]int{0, 1, 2, 3, 4, 5, 6}, 3, true)
	var got []string
	for _, c := range cs {
		got = append(got, sweep.FormatIndices(c.indices)+"@"+sweep.FormatIndices(c.tasks)+"+"+string(rune('0'+c.offset)))
	}
	want := []string{"0-2@0-2+0", "3-5@0-2+3", "6@0+6"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v want %v", got, want)
	}
	// Indices below the limit keep task id = index, whatever gaps there are.
	if cs := chunks([]int{1, 5}, 10, true); len(cs) != 1 || cs[0].offset != 0 || sweep.FormatIndices(cs[0].tasks) != "1,5" {
		t.Errorf("got %+v", cs)
	}
}
