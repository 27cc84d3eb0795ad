package reports

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// On the history page a cell's line has one colour on every chart, no
// line is drawn in the red of a regression, and the last run's date label
// ends at the plot rather than being cut at the chart's edge.
func TestHistoryPageColours(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, historyFixture(t, 12), ""); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	colourOf := map[string]string{}
	legend := regexp.MustCompile(`<span><i style="background:([^"]+)"></i>([^<]+)</span>`)
	for _, m := range legend.FindAllStringSubmatch(page, -1) {
		colour, cell := m[1], m[2]
		if was, ok := colourOf[cell]; ok && was != colour {
			t.Errorf("cell %s is %s on one chart and %s on another", cell, was, colour)
		}
		colourOf[cell] = colour
		if isRed(colour) {
			t.Errorf("cell %s is drawn in %s, a red like a regression's", cell, colour)
		}
	}
	if len(colourOf) < 2 {
		t.Fatalf("%d cells in the legends", len(colourOf))
	}
	for _, c := range palette {
		if isRed(c) {
			t.Errorf("the palette holds %s, a red like a regression's", c)
		}
	}
	if !strings.Contains(page, `fill="`+regressionColor+`" stroke="#fff" stroke-width="1.5" class="regression"`) {
		t.Error("no regression drawn in its own colour")
	}
	ticks := regexp.MustCompile(`<text class="x-tick" x="([0-9.]+)" y="[0-9.]+" dy="14" text-anchor="(\w+)">`)
	all := ticks.FindAllStringSubmatch(page, -1)
	if len(all) == 0 {
		t.Fatal("no x-axis labels")
	}
	for _, m := range all {
		x, _ := strconv.ParseFloat(m[1], 64)
		if m[2] == "middle" && x+xLabelHalf > chartW {
			t.Errorf("a label centred at x=%v runs past the chart's width %d", x, chartW)
		}
	}
	if last := all[len(all)-1]; last[1] != strconv.Itoa(plotR) || last[2] != "end" {
		t.Errorf("the last run's label at x=%s is anchored %s, cut at the edge", last[1], last[2])
	}
}

// isRed reports whether a #rrggbb colour is a strong red: red well over
// green and blue.
func isRed(c string) bool {
	if len(c) == 4 {
		c = "#" + strings.Repeat(c[1:2], 2) + strings.Repeat(c[2:3], 2) + strings.Repeat(c[3:4], 2)
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(c, "#"), 16, 32)
	if err != nil {
		return false
	}
	r, g, b := v>>16, v>>8&0xff, v&0xff
	return r > 160 && g < 90 && b < 90
}
