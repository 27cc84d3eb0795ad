package gpuhealth

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits of what ParseSMI reads: the document's size (nvidia-smi -q -x of
// an 8-GPU node is ~300 KB), its nesting (nvidia-smi's is 6 deep), and
// the GPUs and counters kept.
const (
	MaxSMISize     = 4 << 20
	MaxDepth       = 32
	MaxGPUs        = 64
	MaxCounters    = 256 // a GPU's
	maxCounterName = 128
)

// sections are the parts of a <gpu> element whose leaves are health
// counters, under nvidia-smi's own element names (nvsmi_device_v13.dtd):
// a leaf "0", "12" or "1500000 us" is read as its number, "Yes"/"No" as
// 1/0, anything else ("N/A", "Enabled") is not a counter.
var sections = map[string]bool{
	"ecc_errors/volatile":               true,
	"ecc_errors/aggregate":              true,
	"ecc_errors/channel_repair_pending": true,
	"ecc_errors/tpc_repair_pending":     true,
	"ecc_errors/unrepairable_memory":    true,
	"retired_pages":                     true,
	"remapped_rows":                     true,
	"clocks_event_reasons_counters":     true,
	"clocks_throttle_reasons_counters":  true,
}

// skipped are parts of those sections that are no counters of errors.
var skipped = map[string]bool{
	"remapped_rows/row_remapper_histogram": true,
}

// reasonSections hold the clock event (throttle) reasons, each "Active"
// or "Not Active": clocks_event_reasons from driver 535 on,
// clocks_throttle_reasons before.
var reasonSections = map[string]bool{"clocks_event_reasons": true, "clocks_throttle_reasons": true}

// ParseSMI reads the GPUs of nvidia-smi -q -x: each GPU's minor number,
// UUID, PCI bus id, health counters and active clock event reasons. The
// document is read as a stream of tokens, bounded in size and depth; a
// DOCTYPE is never fetched and no entity is expanded.
func ParseSMI(b []byte) ([]GPU, error) {
	if len(b) > MaxSMISize {
		return nil, fmt.Errorf("nvidia-smi -q -x is %d bytes, over the %d a node's is expected to be", len(b), MaxSMISize)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var (
		path []string
		gpus []GPU
		cur  *GPU
		text strings.Builder
	)
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, smiError(b, d.InputOffset(), err.Error())
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(path) >= MaxDepth {
				return nil, smiError(b, d.InputOffset(), fmt.Sprintf("elements nested over %d deep", MaxDepth))
			}
			path = append(path, t.Name.Local)
			text.Reset()
			if len(path) == 2 && path[0] == "nvidia_smi_log" && t.Name.Local == "gpu" {
				if len(gpus) == MaxGPUs {
					return nil, smiError(b, d.InputOffset(), fmt.Sprintf("over %d GPUs", MaxGPUs))
				}
				gpus = append(gpus, GPU{Index: -1, Counters: map[string]int64{}})
				cur = &gpus[len(gpus)-1]
			}
		case xml.CharData:
			if text.Len() < 4096 {
				text.Write(t)
			}
		case xml.EndElement:
			if len(path) == 0 {
				return nil, smiError(b, d.InputOffset(), "an end tag without its start")
			}
			if cur != nil && len(path) > 2 {
				if err := cur.leaf(path[2:], strings.TrimSpace(text.String())); err != nil {
					return nil, smiError(b, d.InputOffset(), err.Error())
				}
			}
			if len(path) == 2 {
				cur = nil
			}
			path = path[:len(path)-1]
			text.Reset()
		}
	}
	if len(path) != 0 {
		return nil, fmt.Errorf("nvidia-smi -q -x ends inside <%s>", path[len(path)-1])
	}
	return gpus, nil
}

// leaf takes one element of a GPU (its path below <gpu>, its text).
func (g *GPU) leaf(p []string, v string) error {
	switch strings.Join(p, "/") {
	case "minor_number":
		if n, err := strconv.Atoi(v); err == nil {
			g.Index = n
		}
		return nil
	case "uuid":
		g.UUID = clip(v, 80)
		return nil
	case "pci/pci_bus_id":
		g.PCI = clip(v, 40)
		return nil
	}
	if len(p) == 2 && reasonSections[p[0]] {
		if v == "Active" {
			g.Throttle = append(g.Throttle, clip(reasonName(p[1]), maxCounterName))
		}
		return nil
	}
	if !inSection(p) {
		return nil
	}
	n, ok := counterValue(v)
	if !ok {
		return nil
	}
	name := counterName(p)
	if _, dup := g.Counters[name]; !dup && len(g.Counters) >= MaxCounters {
		return fmt.Errorf("GPU %s: over %d health counters", g.UUID, MaxCounters)
	}
	g.Counters[name] = n
	return nil
}

// inSection says whether a leaf's path is in one of the counted sections
// and not in a skipped part of one.
func inSection(p []string) bool {
	in := false
	for i := 1; i <= len(p); i++ {
		pre := strings.Join(p[:i], "/")
		if skipped[pre] {
			return false
		}
		in = in || sections[pre]
	}
	return in
}

// counterName is a counter's name from its path:
// "ecc_errors.volatile.dram_uncorrectable"; the two throttle counter
// sections share "clocks_event_reasons_counters.", their leaves without
// the section's name repeated ("clocks_event_reasons_counters.hw_therm_slowdown").
func counterName(p []string) string {
	q := append([]string(nil), p...)
	if q[0] == "clocks_throttle_reasons_counters" {
		q[0] = "clocks_event_reasons_counters"
	}
	last := len(q) - 1
	for _, pre := range []string{"clocks_event_reasons_counters_", "clocks_throttle_reasons_counters_"} {
		q[last] = strings.TrimPrefix(q[last], pre)
	}
	return clip(strings.Join(q, "."), maxCounterName)
}

// reasonName is a clock event reason without its section's prefix:
// "hw_thermal_slowdown".
func reasonName(s string) string {
	for _, pre := range []string{"clocks_event_reason_", "clocks_throttle_reason_"} {
		s = strings.TrimPrefix(s, pre)
	}
	return s
}

// counterValue reads "12", "1500000 us", "Yes" and "No"; false for
// anything else ("N/A", "Enabled").
func counterValue(v string) (int64, bool) {
	switch v {
	case "Yes":
		return 1, true
	case "No":
		return 0, true
	}
	num, _, _ := strings.Cut(v, " ")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// smiError places a refusal at its line and column in the document.
func smiError(b []byte, off int64, msg string) error {
	off = min(max(off, 0), int64(len(b)))
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(b[:off], '\n'))
	return fmt.Errorf("nvidia-smi -q -x:%d:%d: %s", line, col, msg)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
