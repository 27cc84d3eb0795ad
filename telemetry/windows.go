package telemetry

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
	"github.com/kvsweep/kvsweep/sweep"
)

// Window is when a case ran, in Unix milliseconds; End is math.MaxInt64
// for a case whose end was not marked (its window runs to the last
// sample).
type Window struct {
	Case       string
	Start, End int64
}

// MaxWindowsFile bounds what collect reads of case-windows.jsonl.
const MaxWindowsFile = 4 << 20

// ParseWindows reads case-windows.jsonl (sweep.CaseWindowsFile): a line
// {"case":"TC-02","event":"start","t":UNIX_MS} opens the case's window
// and the same with "end" closes it; other keys are the cache steps'
// and ignored here. A line that is not such an event (not JSON, nested
// past 64 levels, an unknown event, a case id that is empty, longer
// than 64 bytes or not printable, a time not after 1970, an end with no
// start open) is skipped and counted. A case with several windows keeps
// its last. The windows come ordered by their start.
func ParseWindows(b []byte) (ws []Window, skipped int) {
	ws, skipped, _ = parseWindows(b)
	return ws, skipped
}

// parseWindows is ParseWindows with the first line skipped, as
// case-windows.jsonl:LINE:COL: what it is and what was expected.
func parseWindows(b []byte) (ws []Window, skipped int, first string) {
	open := map[string]int64{}
	last := map[string]Window{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	skip := func(n, col int, what string) {
		if skipped++; first == "" {
			first = fmt.Sprintf("%s:%d:%d: %s", windowsFile, n, col, what)
		}
	}
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, col, err := windowEvent(line)
		if err != "" {
			skip(n, col, err)
			continue
		}
		switch start, isOpen := open[ev.Case]; {
		case ev.Event == "start":
			open[ev.Case] = ev.T
		case ev.Event == "end" && isOpen && ev.T >= start:
			last[ev.Case] = Window{Case: ev.Case, Start: start, End: ev.T}
			delete(open, ev.Case)
		case ev.Event == "end":
			skip(n, 1, fmt.Sprintf("an end of %s with no start open before it", ev.Case))
		default:
			skip(n, 1, fmt.Sprintf("event %q (expected start or end)", clip(ev.Event, 32)))
		}
	}
	if sc.Err() != nil {
		skip(0, 0, sc.Err().Error())
	}
	// A case that never ended (its harness died, or the end could not be
	// written) ends where the next case starts: its window never holds
	// another case's traffic.
	for c, start := range open {
		end := int64(math.MaxInt64)
		for _, w := range last {
			if w.Start > start && w.Start < end {
				end = w.Start
			}
		}
		for o, s := range open {
			if o != c && s > start && s < end {
				end = s
			}
		}
		last[c] = Window{Case: c, Start: start, End: end}
	}
	for _, w := range last {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b Window) int {
		if a.Start != b.Start {
			return cmp.Compare(a.Start, b.Start)
		}
		return cmp.Compare(a.Case, b.Case)
	})
	return ws, skipped, first
}

// windowsFile names the file in what a skipped line says.
const windowsFile = "case-windows.jsonl"

type windowLine struct {
	Case  string `json:"case"`
	Event string `json:"event"`
	T     int64  `json:"t"`
}

// windowEvent reads one line; err says why it is none, at column col.
func windowEvent(line []byte) (ev windowLine, col int, err string) {
	if e := jsonscan.Bound(line, jsonscan.MaxDepth, 1<<20); e != nil {
		return ev, 1, e.Error()
	}
	if e := json.Unmarshal(line, &ev); e != nil {
		col = 1
		if se, ok := e.(*json.SyntaxError); ok {
			col = int(se.Offset)
		}
		return ev, col, "not an event (expected {\"case\":ID,\"event\":\"start\"|\"end\",\"t\":UNIX_MS}): " + e.Error()
	}
	switch {
	case !sweep.IsCaseMarkID(ev.Case):
		return ev, 1, fmt.Sprintf("case %q (expected a case id of 1 to 64 printable bytes, no space)", clip(ev.Case, 80))
	case ev.T <= 0:
		return ev, 1, fmt.Sprintf("t %d (expected Unix milliseconds after 1970)", ev.T)
	}
	return ev, 0, ""
}

// counterSpan and gaugeSpan are the points of a series a window reads:
// those inside it, never one outside. A scrape before the start or after
// the end may hold the traffic of the case before or after (cases run
// back to back), and a cold case judged on its neighbour's hits would be
// INVALID for what it did not do; so a counter's increase is from its
// first point inside the window to its last (two points at least), and a
// window shorter than the scrape interval has no figures, which the
// verdicts say (not measured) rather than borrow a neighbour's.
func counterSpan(pts []point, w Window) (i0, i1 int, ok bool) {
	i0 = slices.IndexFunc(pts, func(p point) bool { return p.t >= w.Start })
	i1 = -1
	for i, p := range pts {
		if p.t >= w.Start && p.t <= w.End {
			i1 = i
		}
	}
	return i0, i1, i0 >= 0 && i1 > i0
}

func gaugeSpan(pts []point, w Window) []point {
	var in []point
	for _, p := range pts {
		if p.t >= w.Start && p.t <= w.End {
			in = append(in, p)
		}
	}
	return in
}
