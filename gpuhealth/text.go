package gpuhealth

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// Limits of the text outputs: nvidia-smi nvlink -e and the kernel log's
// lines read, the line kept, and the Xid lines a snapshot keeps.
const (
	MaxTextSize = 4 << 20
	MaxLine     = 4096
	MaxXid      = 256
)

var (
	nvlinkGPU  = regexp.MustCompile(`^GPU (\d+): .*\(UUID: ([^)]+)\)`)
	nvlinkLine = regexp.MustCompile(`^Link (\d+): ([A-Za-z][A-Za-z ]*[A-Za-z]): (\d+)$`)
	xidLine    = regexp.MustCompile(`NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+)(?:\.[0-9A-Fa-f]+)?\): (\d+)`)
)

// ParseNVLink reads nvidia-smi nvlink -e into the GPUs' counters: each
// "Link L: NAME: N" line adds N to counter nvlink.NAME (lower case,
// words joined by _) of the GPU above it ("GPU I: MODEL (UUID: U)"),
// matched to gpus by UUID, else by index. Lines it does not know (an
// error rate such as "Effective BER: 1.2e-15") are skipped.
func ParseNVLink(b []byte, gpus []GPU) {
	var cur *GPU
	eachLine(b, func(line string) {
		line = strings.TrimSpace(line)
		if m := nvlinkGPU.FindStringSubmatch(line); m != nil {
			cur = nil
			idx, _ := strconv.Atoi(m[1])
			for i := range gpus {
				if gpus[i].UUID == strings.TrimSpace(m[2]) || (gpus[i].UUID == "" && gpus[i].Index == idx) {
					cur = &gpus[i]
				}
			}
			return
		}
		m := nvlinkLine.FindStringSubmatch(line)
		if m == nil || cur == nil {
			return
		}
		n, err := strconv.ParseInt(m[3], 10, 64)
		if err != nil {
			return
		}
		name := "nvlink." + strings.ReplaceAll(strings.ToLower(strings.Join(strings.Fields(m[2]), " ")), " ", "_")
		if cur.Counters == nil {
			cur.Counters = map[string]int64{}
		}
		if _, has := cur.Counters[name]; has || len(cur.Counters) < MaxCounters {
			cur.Counters[name] += n
		}
	})
}

// ParseXid is the kernel log's NVRM Xid lines, the newest MaxXid:
// "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
func ParseXid(b []byte) []Xid {
	var out []Xid
	eachLine(b, func(line string) {
		m := xidLine.FindStringSubmatch(line)
		if m == nil {
			return
		}
		code, err := strconv.Atoi(m[2])
		if err != nil {
			return
		}
		out = append(out, Xid{PCI: m[1], Code: code, Line: clip(strings.TrimSpace(line), 300)})
		if len(out) > 2*MaxXid {
			out = append(out[:0], out[len(out)-MaxXid:]...)
		}
	})
	if len(out) > MaxXid {
		out = out[len(out)-MaxXid:]
	}
	return out
}

// eachLine calls f with each line of b (the first MaxTextSize bytes), a
// line cut at MaxLine.
func eachLine(b []byte, f func(string)) {
	if len(b) > MaxTextSize {
		b = b[:MaxTextSize]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if adv == 0 && tok == nil && len(data) >= MaxLine {
			return len(data), data[:MaxLine], nil // a long line's start; the rest reads as lines of their own
		}
		return adv, tok, err
	})
	for sc.Scan() {
		f(sc.Text())
	}
}
