package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// Summary is how the scraping went, for the cell's row, and each
// worker's figures.
type Summary struct {
	Samples int    `json:"samples"`
	Failed  int    `json:"failed,omitempty"`
	Note    string `json:"note,omitempty"` // the last error, what was not seen, how the figures were windowed
	// Workers are the figures of each worker: per case window, or over
	// the whole cell (Case empty) where no window was marked.
	Workers []Worker `json:"workers,omitempty"`
}

// Worker is one worker's figures in one case window: the worker is an
// endpoint plus the rank labels of its series (its role and name from
// the endpoints file, its node the URL's host), Catalog the entries that
// gave its figures.
type Worker struct {
	Case    string             `json:"case,omitempty"`
	Worker  string             `json:"worker"`
	Role    string             `json:"role,omitempty"`
	Node    string             `json:"node,omitempty"`
	Catalog []string           `json:"catalog,omitempty"`
	Figures map[string]float64 `json:"figures,omitempty"`
}

// Figure is one derived figure.
type Figure struct {
	Name, Unit, Direction string
	Value                 float64
}

// Derived is what DeriveWindows gives: the cell's figures over all its
// workers, over the whole cell and per case window, and the summary.
type Derived struct {
	Cell    []Figure
	Cases   map[string][]Figure
	Windows []Window
	Summary Summary
}

// limits of what one file may make Derive hold.
const (
	maxWorkers = 256
	maxNote    = 2000
)

// Derive reads the series (the file's bytes) and derives the figures
// over the whole cell; a line that does not parse is skipped and counted
// as failed.
func Derive(b []byte) ([]Figure, Summary) {
	d := DeriveWindows(b, nil)
	return d.Cell, d.Summary
}

// DeriveWindows derives the figures of each worker and of the cell, per
// case window of windows (case-windows.jsonl's bytes: ParseWindows) or,
// where none was marked, over the whole cell.
func DeriveWindows(series, windows []byte) Derived {
	l := load(series)
	d := Derived{Summary: l.sum, Cases: map[string][]Figure{}}
	ws, skipped, first := parseWindows(windows)
	d.Windows = ws
	whole := Window{Start: math.MinInt64, End: math.MaxInt64}
	var notes []string
	if l.sum.Note != "" {
		notes = append(notes, l.sum.Note)
	}
	cell := l.window(whole)
	d.Cell = cell.figs
	if len(ws) == 0 {
		d.Summary.Workers = cell.rows
		if len(l.workers) > 0 {
			notes = append(notes, "no case window marked: figures over the whole cell")
		}
	}
	for _, w := range ws {
		r := l.window(w)
		d.Cases[w.Case] = r.figs
		d.Summary.Workers = append(d.Summary.Workers, r.rows...)
	}
	if len(ws) > 0 {
		notes = append(notes, fmt.Sprintf("figures per case window (%d)", len(ws)))
	}
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d lines of case-windows.jsonl skipped (first: %s)", skipped, first))
	}
	notes = append(notes, l.notes()...)
	switch {
	case l.sum.Samples == 0 && l.sum.Note == "":
		notes = append(notes, "no sample")
	case len(l.workers) == 0 && l.sum.Samples > 0:
		notes = append(notes, fmt.Sprintf("none of the catalog's families (%s, ...) in %d samples", strings.Join(Families[:3], ", "), l.sum.Samples))
	}
	d.Summary.Note = clip(strings.Join(notes, "; "), maxNote)
	return d
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

type point struct {
	t int64
	v float64
}

type wseries struct {
	family string
	labels map[string]string
	pts    []point
}

type worker struct {
	url, rank, role, name string
	label                 string // how rows name it
	series                []*wseries
	idx                   map[skey]*wseries
}

// skey is a series of a worker: its family and its labels' canonical
// text.
type skey struct{ family, labels string }

// labelInfo is what a series' labels say, worked out once for each
// labels object met.
type labelInfo struct {
	labels    map[string]string
	rank, key string
}

type loaded struct {
	workers []*worker
	sum     Summary
	byURL   map[string]map[string]*worker // URL -> rank -> worker
	prev    map[string]int64              // URL -> its last scrape
	info    map[string]*labelInfo         // labels' canonical text -> it
	raw     map[string]*labelInfo         // a labels object's JSON text -> it
	in      jsonscan.Interner
}

var isFamily = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range Families {
		m[f] = true
	}
	return m
}()

// load reads the file into each worker's series. A counter series that
// appears after its endpoint's first scrape starts from 0 at the scrape
// before (a Prometheus counter is created at 0). A line is read by
// scanLine where it can, by encoding/json where it cannot (which
// decides).
func load(b []byte) *loaded {
	l := &loaded{byURL: map[string]map[string]*worker{}, prev: map[string]int64{}, info: map[string]*labelInfo{}, raw: map[string]*labelInfo{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), MaxLine+1)
	for sc.Scan() {
		// The file is in the cell's directory, where the harness writes
		// too: a line nested past 64 levels is not one scrape wrote.
		if jsonscan.Bound(sc.Bytes(), jsonscan.MaxDepth, MaxLine) != nil {
			l.sum.Failed++
			continue
		}
		if scanLines && l.scanLine(sc.Bytes()) {
			continue
		}
		var s Sample
		if json.Unmarshal(sc.Bytes(), &s) != nil {
			l.sum.Failed++
			continue
		}
		if l.sample(s.URL, s.Error) {
			for _, se := range seriesOf(s) {
				l.add(s, se.Family, l.infoOf(se.Labels), se.Value)
			}
			l.prev[s.URL] = s.T
		}
	}
	if sc.Err() != nil {
		l.sum.Failed++
	}
	l.name()
	return l
}

// sample counts a line: false for an error line, whose error is the
// note's.
func (l *loaded) sample(url, errText string) bool {
	if errText != "" {
		l.sum.Failed++
		l.sum.Note = errText
		return false
	}
	l.sum.Samples++
	return true
}

// seriesOf is a sample's series; a line of an older kvsweep ("values":
// each family summed over its series) is read as series without labels.
func seriesOf(s Sample) []Series {
	if s.Series != nil || s.Values == nil {
		return s.Series
	}
	var out []Series
	for _, f := range Families {
		if v, ok := s.Values[f]; ok {
			out = append(out, Series{Family: f, Value: v})
		}
	}
	return out
}

func (l *loaded) infoOf(labels map[string]string) *labelInfo {
	key := canonical(labels)
	if li := l.info[key]; li != nil {
		return li
	}
	li := &labelInfo{labels: labels, rank: rankOf(labels), key: key}
	if len(l.info) < maxLabelSets {
		l.info[key] = li
	}
	return li
}

// scanLines is false only in the tests that hold scanLine to
// encoding/json.
var scanLines = true

// maxLabelSets bounds the labels objects remembered.
const maxLabelSets = 4096

func (l *loaded) add(s Sample, family string, li *labelInfo, v float64) {
	if !isFamily[family] || math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	ranks := l.byURL[s.URL]
	if ranks == nil {
		ranks = map[string]*worker{}
		l.byURL[s.URL] = ranks
	}
	w := ranks[li.rank]
	if w == nil {
		if len(l.workers) == maxWorkers {
			return
		}
		w = &worker{url: s.URL, rank: li.rank, role: s.Role, name: s.Name, idx: map[skey]*wseries{}}
		ranks[li.rank] = w
		l.workers = append(l.workers, w)
	}
	key := skey{family, li.key}
	ws := w.idx[key]
	if ws == nil {
		ws = &wseries{family: family, labels: li.labels}
		if t, ok := l.prev[s.URL]; ok && counters[family] {
			ws.pts = append(ws.pts, point{t, 0})
		}
		w.idx[key] = ws
		w.series = append(w.series, ws)
	}
	ws.pts = append(ws.pts, point{s.T, v})
}

// rankOf is the rank a series' labels give: the data-parallel rank
// (vLLM's engine, Dynamo's and SGLang's dp_rank), the tensor- and
// pipeline-parallel ranks (SGLang's tp_rank, pp_rank).
func rankOf(l map[string]string) string {
	var parts []string
	// Behind a router, the worker's own address first.
	for _, k := range []string{"worker_addr", "worker_id"} {
		if l[k] != "" {
			parts = append(parts, "worker="+l[k])
			break
		}
	}
	dp := l["dp_rank"]
	if dp == "" {
		dp = l["engine"]
	}
	for _, p := range [][2]string{{"dp", dp}, {"tp", l["tp_rank"]}, {"pp", l["pp_rank"]}, {"ep", l["moe_ep_rank"]}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, " ")
}

func canonical(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + l[k] + ",")
	}
	return b.String()
}

// name merges an endpoint's series without rank into its one ranked
// worker where it has one (SGLang's tokenizer counters beside one
// scheduler's gauges), and names each worker: the endpoints file's name
// (or the URL), with the rank where the endpoint has several.
func (l *loaded) name() {
	ranks := map[string][]*worker{}
	for _, w := range l.workers {
		if w.rank != "" {
			ranks[w.url] = append(ranks[w.url], w)
		}
	}
	var kept []*worker
	for _, w := range l.workers {
		if r := ranks[w.url]; w.rank == "" && len(r) == 1 {
			r[0].series = append(r[0].series, w.series...)
			continue
		}
		kept = append(kept, w)
	}
	for _, w := range kept {
		w.label = w.name
		if w.label == "" {
			w.label = w.url
		}
		if len(ranks[w.url]) > 1 && w.rank != "" {
			w.label += " " + w.rank
		}
	}
	l.workers = kept
}
