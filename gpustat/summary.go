package gpustat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Summary is what a cell's GPUs did, per GPU, for its row.
type Summary struct {
	Samples int    `json:"samples"`          // rows read
	Failed  int    `json:"failed,omitempty"` // lines of the file that are not samples
	Note    string `json:"note,omitempty"`   // the sampler's last note, or a GPU that fell silent
	GPUs    []GPU  `json:"gpus,omitempty"`
}

// GPU is one GPU's figures over the cell: each field's mean, lowest and
// highest over the samples that reported it (absent: none did).
type GPU struct {
	Index       int     `json:"index"`
	UUID        string  `json:"uuid,omitempty"`
	Samples     int     `json:"samples"`
	PowerW      *Stat   `json:"power_w,omitempty"`      // power.draw
	UtilPct     *Stat   `json:"util_pct,omitempty"`     // utilization.gpu: the time a kernel ran
	MemUtilPct  *Stat   `json:"mem_util_pct,omitempty"` // utilization.memory: the time memory was read or written
	MemUsedMiB  *Stat   `json:"mem_used_mib,omitempty"` // memory.used
	MemTotalMiB float64 `json:"mem_total_mib,omitempty"`
	SMClockMHz  *Stat   `json:"sm_clock_mhz,omitempty"`  // clocks.current.sm: a low Min is throttling
	MemClockMHz *Stat   `json:"mem_clock_mhz,omitempty"` // clocks.current.memory
	TempC       *Stat   `json:"temp_c,omitempty"`        // temperature.gpu
}

// Stat is a field's mean, lowest and highest value.
type Stat struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// acc accumulates one field of one GPU.
type acc struct {
	sum, lo, hi float64
	n           int
}

func (a *acc) add(v float64) {
	if a.n == 0 || v < a.lo {
		a.lo = v
	}
	if a.n == 0 || v > a.hi {
		a.hi = v
	}
	a.sum += v
	a.n++
}

func (a *acc) stat() *Stat {
	if a.n == 0 {
		return nil
	}
	return &Stat{Mean: a.sum / float64(a.n), Min: a.lo, Max: a.hi}
}

// Summarize reads gpu.jsonl (the file's bytes): each GPU's figures, in
// index order. A line that is not a sample is counted as failed, and
// the first such is named in the note with its line; a GPU with fewer
// samples than the most sampled one (it fell off the bus, or the
// sampler started after it) is noted too.
func Summarize(b []byte) Summary {
	var sum Summary
	type gpu struct {
		uuid string
		n    int
		f    [len(statFields)]acc
	}
	gpus := map[int]*gpu{}
	bad := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 64<<10)
	for line := 1; sc.Scan(); line++ {
		var s Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || s.GPU < -1 || s.GPU > 1023 || (s.GPU == -1) != (s.Note != "") {
			if sum.Failed++; bad == "" {
				bad = fmt.Sprintf("gpu.jsonl:%d: %q is not a sample (expected {\"t\":..,\"gpu\":N,\"v\":{..}} or a note)", line, clip(sc.Text()))
			}
			continue
		}
		if s.Note != "" {
			sum.Note = s.Note
			continue
		}
		sum.Samples++
		g := gpus[s.GPU]
		if g == nil {
			g = &gpu{}
			gpus[s.GPU] = g
		}
		g.n++
		if s.UUID != "" {
			g.uuid = s.UUID
		}
		for i, name := range statFields {
			if v, ok := s.Values[name]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				g.f[i].add(v)
			}
		}
	}
	if sc.Err() != nil && bad == "" {
		sum.Failed++
		bad = "gpu.jsonl: " + sc.Err().Error()
	}
	most := 0
	for _, g := range gpus {
		most = max(most, g.n)
	}
	var silent []string
	for _, i := range sortedKeys(gpus) {
		g := gpus[i]
		out := GPU{Index: i, UUID: g.uuid, Samples: g.n, PowerW: g.f[0].stat(), UtilPct: g.f[1].stat(), MemUtilPct: g.f[2].stat(),
			MemUsedMiB: g.f[3].stat(), SMClockMHz: g.f[5].stat(), MemClockMHz: g.f[6].stat(), TempC: g.f[7].stat()}
		if t := g.f[4].stat(); t != nil {
			out.MemTotalMiB = t.Max
		}
		sum.GPUs = append(sum.GPUs, out)
		if g.n+1 < most {
			silent = append(silent, fmt.Sprintf("GPU %d has %d samples of %d", i, g.n, most))
		}
	}
	sum.Note = joinNotes(append([]string{sum.Note, bad}, silent...))
	if sum.Samples == 0 && sum.Note == "" {
		sum.Note = "no sample"
	}
	return sum
}

// statFields are the fields summarised, in GPU's order.
var statFields = [...]string{"power.draw", "utilization.gpu", "utilization.memory", "memory.used", "memory.total",
	"clocks.current.sm", "clocks.current.memory", "temperature.gpu"}

func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func joinNotes(ns []string) string {
	return strings.Join(slices.DeleteFunc(ns, func(s string) bool { return s == "" }), "; ")
}

// Figures are s's mean, lowest and highest value; ok is false for a nil
// Stat (a field no sample reported).
func (s *Stat) Figures() (mean, lo, hi float64, ok bool) {
	if s == nil {
		return 0, 0, 0, false
	}
	return s.Mean, s.Min, s.Max, true
}
