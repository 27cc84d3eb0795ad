// Package gpuhealth is the health of a cell's GPUs before and after it
// ran: the counters that say a GPU or its links went wrong, read on the
// job's head node before the harness starts and after it ends
// (kvsweep job health), and what rose in between.
//
// A snapshot (Snapshot, cells/ID/health-before.json and
// health-after.json) holds, for each GPU of the node:
//
//   - from nvidia-smi -q -x (ParseSMI): ECC errors, volatile and
//     aggregate (ecc_errors.volatile.dram_uncorrectable, ...), retired
//     pages (retired_pages.*), remapped rows (remapped_rows.*, the
//     pending and failure flags as 1/0), the time spent in each clock
//     event (throttle) reason (clocks_event_reasons_counters.*, in µs)
//     and the reasons active at that moment;
//   - from nvidia-smi nvlink -e (ParseNVLink): each link's error
//     counters, summed over the GPU's links (nvlink.replay_errors,
//     nvlink.recovery_errors, nvlink.crc_errors, ...);
//   - from the kernel log (dmesg; ParseXid): the "NVRM: Xid" lines, each
//     matched to its GPU by PCI bus id. nvidia-smi has no Xid counter:
//     the driver reports Xids to the kernel log only (and to DCGM, which
//     kvsweep does not need).
//
// Compare lists what rose per GPU and counter; a rise that means the
// hardware failed under the cell (Faulty: an Xid, an NVLink error, an
// uncorrectable ECC error, a retired page or a remapped row) makes the
// cell an infra failure, retried away from the node.
package gpuhealth

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Snapshot is the health counters of a node's GPUs at one moment.
type Snapshot struct {
	Node  string `json:"node,omitempty"`
	JobID string `json:"job_id,omitempty"`
	T     int64  `json:"t"` // Unix ms
	GPUs  []GPU  `json:"gpus,omitempty"`
	// Xid is the kernel log's Xid lines (the newest MaxXid); XidRead
	// says whether the kernel log could be read at all.
	Xid     []Xid `json:"xid,omitempty"`
	XidRead bool  `json:"xid_read"`
	// Notes say what could not be read ("no nvidia-smi on the node").
	Notes []string `json:"notes,omitempty"`
}

// GPU is one GPU's counters.
type GPU struct {
	Index    int              `json:"index"` // nvidia-smi's minor number
	UUID     string           `json:"uuid,omitempty"`
	PCI      string           `json:"pci,omitempty"` // 00000000:3B:00.0
	Counters map[string]int64 `json:"counters,omitempty"`
	// Throttle is the clock event reasons active at the snapshot
	// ("sw_power_cap", "hw_thermal_slowdown").
	Throttle []string `json:"throttle,omitempty"`
}

// Xid is one Xid line of the kernel log.
type Xid struct {
	PCI  string `json:"pci"`  // as the line has it: 0000:3b:00
	Code int    `json:"code"` // 79: fallen off the bus, 74: NVLink error, ...
	Line string `json:"line"`
}

// Change is one counter that rose during the cell on one GPU (GPU -1:
// an Xid line whose PCI id matches none of the node's GPUs).
type Change struct {
	GPU     int    `json:"gpu"`
	UUID    string `json:"uuid,omitempty"`
	Counter string `json:"counter"`
	Before  int64  `json:"before"`
	After   int64  `json:"after"`
	// Fault: the rise means the hardware failed under the cell.
	Fault bool `json:"fault,omitempty"`
	// Detail is the Xid lines of an "xid" change.
	Detail string `json:"detail,omitempty"`
}

// Report is what rose during a cell on its head node's GPUs.
type Report struct {
	Node    string   `json:"node,omitempty"`
	JobID   string   `json:"job_id,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	// Note says what could not be compared.
	Note string `json:"note,omitempty"`
}

// Faulty says whether a rise of counter means the hardware failed: an
// Xid, an NVLink error (CRC, replay, recovery; not the symbol errors
// that forward error correction repairs), an uncorrectable ECC error, a retired page, a
// remapped row (and their pending and failure flags). Correctable ECC
// errors and throttling are shown, never failures.
func Faulty(counter string) bool {
	switch {
	case counter == "xid", strings.HasPrefix(counter, "retired_pages."), strings.HasPrefix(counter, "remapped_rows."):
		return true
	case strings.HasPrefix(counter, "nvlink."):
		// FEC corrects symbol errors on healthy links; what it could not
		// correct shows as CRC, replay and recovery errors.
		return !strings.Contains(counter, "fec") && !strings.Contains(counter, "symbol") && !strings.HasSuffix(counter, "_ber")
	case strings.HasPrefix(counter, "ecc_errors."):
		return strings.Contains(counter, "uncorrectable") || strings.Contains(counter, "double_bit") ||
			strings.HasSuffix(counter, "_pending") || strings.HasSuffix(counter, "unrepairable_memory") ||
			strings.HasSuffix(counter, "threshold_exceeded")
	}
	return false
}

// Compare lists what rose between before and after, per GPU (matched by
// UUID, else by index) and counter, faults first; a clock event reason
// active after and not before is a change from 0 to 1 of
// "clocks_event_reasons.NAME".
func Compare(before, after *Snapshot) Report {
	r := Report{Node: after.Node, JobID: after.JobID}
	notes := append([]string(nil), after.Notes...)
	if len(before.GPUs) == 0 && len(after.GPUs) == 0 && len(notes) > 0 {
		r.Note = strings.Join(notes, "; ")
		return r
	}
	for _, g := range after.GPUs {
		b, ok := find(before.GPUs, g)
		if !ok {
			notes = append(notes, fmt.Sprintf("GPU %d (%s) was not in the first snapshot", g.Index, g.UUID))
			continue
		}
		for name, v := range g.Counters {
			if w, had := b.Counters[name]; had && v > w {
				r.Changes = append(r.Changes, Change{GPU: g.Index, UUID: g.UUID, Counter: name, Before: w, After: v, Fault: Faulty(name)})
			}
		}
		for _, reason := range g.Throttle {
			if !slices.Contains(b.Throttle, reason) && reason != "gpu_idle" {
				r.Changes = append(r.Changes, Change{GPU: g.Index, UUID: g.UUID, Counter: "clocks_event_reasons." + reason, Before: 0, After: 1})
			}
		}
	}
	r.Changes = append(r.Changes, newXids(before, after)...)
	if (!before.XidRead || !after.XidRead) && len(after.GPUs) > 0 {
		notes = append(notes, "kernel log not readable: Xids unknown")
	}
	slices.SortFunc(r.Changes, func(a, b Change) int {
		if a.Fault != b.Fault {
			if a.Fault {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Counter, b.Counter))
	})
	r.Note = strings.Join(notes, "; ")
	return r
}

// find is before's GPU that is g: the same UUID, else the same index
// where neither has a UUID.
func find(gpus []GPU, g GPU) (GPU, bool) {
	for _, b := range gpus {
		if (g.UUID != "" && b.UUID == g.UUID) || (g.UUID == "" && b.UUID == "" && b.Index == g.Index) {
			return b, true
		}
	}
	return GPU{}, false
}

// newXids is the Xid lines of after that before did not have (lines
// carry the kernel's timestamp, so a repeated Xid is a new line), as one
// "xid" change per GPU: Before is the GPU's Xid lines before, After the
// number after.
func newXids(before, after *Snapshot) []Change {
	if !before.XidRead || !after.XidRead {
		return nil // a log not read before has no lines to tell the new ones from
	}
	seen := map[string]int{}
	for _, x := range before.Xid {
		seen[x.Line]++
	}
	perGPU := map[int]*Change{}
	var order []int
	for _, x := range after.Xid {
		if seen[x.Line] > 0 {
			seen[x.Line]--
			continue
		}
		idx, uuid := gpuOf(after.GPUs, x.PCI)
		c := perGPU[idx]
		if c == nil {
			c = &Change{GPU: idx, UUID: uuid, Counter: "xid", Fault: true}
			c.Before = int64(countXid(before.Xid, x.PCI))
			c.After = c.Before
			perGPU[idx] = c
			order = append(order, idx)
		}
		c.After++
		if len(c.Detail) < 1024 {
			c.Detail = strings.TrimPrefix(c.Detail+"; Xid "+fmt.Sprint(x.Code)+": "+clip(x.Line, 200), "; ")
		}
	}
	out := make([]Change, 0, len(order))
	for _, i := range order {
		out = append(out, *perGPU[i])
	}
	return out
}

func countXid(xs []Xid, pci string) int {
	n := 0
	for _, x := range xs {
		if samePCI(x.PCI, pci) {
			n++
		}
	}
	return n
}

// gpuOf is the GPU whose PCI bus id is pci (-1 when none is).
func gpuOf(gpus []GPU, pci string) (int, string) {
	for _, g := range gpus {
		if samePCI(g.PCI, pci) {
			return g.Index, g.UUID
		}
	}
	return -1, ""
}

// samePCI compares PCI ids as nvidia-smi (00000000:3B:00.0) and the
// kernel log (0000:3b:00) write them: domain, bus and device, in any
// case and with any leading zeros.
func samePCI(a, b string) bool {
	ka, kb := pciKey(a), pciKey(b)
	return ka != "" && ka == kb
}

func pciKey(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s, _, _ = strings.Cut(s, ".")
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return ""
	}
	for i, p := range parts {
		p = strings.TrimLeft(p, "0")
		parts[i] = cmp.Or(p, "0")
	}
	return strings.Join(parts, ":")
}

// Faults is the changes that are faults.
func (r *Report) Faults() []Change {
	var out []Change
	for _, c := range r.Changes {
		if c.Fault {
			out = append(out, c)
		}
	}
	return out
}

// Evidence is the faults in a line: "on n1: GPU 0 (GPU-1f2e…): nvlink.replay_errors 0→12; GPU 1: xid 0→1 (Xid 79: ...)".
func (r *Report) Evidence() string {
	var parts []string
	for _, c := range r.Faults() {
		parts = append(parts, c.String())
	}
	if len(parts) == 0 {
		return ""
	}
	s := strings.Join(parts, "; ")
	if r.Node != "" {
		s = "on " + r.Node + ": " + s
	}
	return s
}

// String is one change: "GPU 0 (GPU-1f2e3d4c): nvlink.replay_errors 0→12".
func (c Change) String() string {
	who := fmt.Sprintf("GPU %d", c.GPU)
	if c.GPU < 0 {
		who = "the node"
	}
	if c.UUID != "" {
		who += " (" + clip(c.UUID, 12) + ")"
	}
	s := fmt.Sprintf("%s: %s %d→%d", who, c.Counter, c.Before, c.After)
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// Counters is the names of the faults' counters, sorted, once each.
func (r *Report) Counters() []string {
	var out []string
	for _, c := range r.Faults() {
		if !slices.Contains(out, c.Counter) {
			out = append(out, c.Counter)
		}
	}
	slices.Sort(out)
	return out
}
