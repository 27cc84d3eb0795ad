package gpuhealth

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real H100 capture's counters and the NVLink counters, as a snapshot.
func TestParseGolden(t *testing.T) {
	gpus, err := ParseSMI(readTestdata(t, "h100-nvidia-smi.xml"))
	if err != nil {
		t.Fatal(err)
	}
	ParseNVLink(readTestdata(t, "nvlink-e.txt"), gpus)
	if len(gpus) != 1 || gpus[0].PCI != "00000000:00:06.0" || gpus[0].Index != 0 {
		t.Fatalf("gpus = %+v", gpus)
	}
	c := gpus[0].Counters
	for name, want := range map[string]int64{
		"ecc_errors.volatile.dram_uncorrectable": 0, "ecc_errors.aggregate.sram_uncorrectable_secded": 0,
		"remapped_rows.remapped_row_pending": 0, "remapped_rows.remapped_row_failure": 0,
		"clocks_event_reasons_counters.hw_therm_slowdown": 0,
		"nvlink.replay_errors":                            3, "nvlink.recovery_errors": 1, "nvlink.crc_errors": 2,
	} {
		if got, ok := c[name]; !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d", name, got, ok, want)
		}
	}
	if _, ok := c["retired_pages.multiple_single_bit_retirement.retired_count"]; ok {
		t.Error("an N/A retired count read as a counter")
	}
	if len(gpus[0].Throttle) != 1 || gpus[0].Throttle[0] != "gpu_idle" {
		t.Errorf("throttle = %v, want the idle reason alone", gpus[0].Throttle)
	}
	b, _ := json.MarshalIndent(gpus, "", "  ")
	golden.Check(t, "testdata/health.golden.json", append(b, '\n'))
}

func snap(xids []Xid, counters map[string]int64, throttle ...string) *Snapshot {
	return &Snapshot{Node: "n1", XidRead: true, Xid: xids,
		GPUs: []GPU{{Index: 0, UUID: "GPU-aaaa", PCI: "00000000:3B:00.0", Counters: counters, Throttle: throttle}}}
}

// An Xid, an NVLink replay error and a correctable ECC error during the
// cell: the first two are faults, named with GPU and before→after.
func TestCompare(t *testing.T) {
	old := Xid{PCI: "0000:3b:00", Code: 13, Line: "[  10.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics Exception"}
	before := snap([]Xid{old}, map[string]int64{"nvlink.replay_errors": 0, "ecc_errors.volatile.dram_correctable": 4, "ecc_errors.volatile.dram_uncorrectable": 0})
	after := snap([]Xid{old, {PCI: "0000:3b:00", Code: 79, Line: "[  99.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=2, GPU has fallen off the bus."}},
		map[string]int64{"nvlink.replay_errors": 12, "ecc_errors.volatile.dram_correctable": 6, "ecc_errors.volatile.dram_uncorrectable": 0}, "hw_thermal_slowdown")
	r := Compare(before, after)
	var got []string
	for _, c := range r.Changes {
		got = append(got, c.String()+map[bool]string{true: " [fault]"}[c.Fault])
	}
	want := []string{
		"GPU 0 (GPU-aaaa): nvlink.replay_errors 0→12 [fault]",
		"GPU 0 (GPU-aaaa): xid 1→2 (Xid 79: [  99.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=2, GPU has fallen off the bus.) [fault]",
		"GPU 0 (GPU-aaaa): clocks_event_reasons.hw_thermal_slowdown 0→1",
		"GPU 0 (GPU-aaaa): ecc_errors.volatile.dram_correctable 4→6",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if ev := r.Evidence(); !strings.HasPrefix(ev, "on n1: GPU 0 (GPU-aaaa): nvlink.replay_errors 0→12; GPU 0") {
		t.Errorf("evidence = %q", ev)
	}
	if c := r.Counters(); strings.Join(c, ",") != "nvlink.replay_errors,xid" {
		t.Errorf("counters = %v", c)
	}
	if quiet := Compare(before, before); len(quiet.Changes) != 0 || quiet.Note != "" {
		t.Errorf("nothing moved, yet %+v", quiet)
	}
	// A kernel log not read before: its old lines are not new Xids.
	unread := *before
	unread.XidRead, unread.Xid = false, nil
	if r := Compare(&unread, before); len(r.Changes) != 0 || r.Note != "kernel log not readable: Xids unknown" {
		t.Errorf("the first kernel log unread: %+v", r)
	}
}

func TestFaulty(t *testing.T) {
	for name, want := range map[string]bool{
		"xid": true, "nvlink.crc_errors": true, "nvlink.replay_errors": true, "nvlink.symbol_errors": false,
		"nvlink.fec_errors_0": false, "ecc_errors.volatile.dram_uncorrectable": true, "ecc_errors.volatile.sram_correctable": false,
		"retired_pages.double_bit_retirement.retired_count": true, "remapped_rows.remapped_row_corr": true,
		"clocks_event_reasons_counters.sw_power_cap": false,
	} {
		if Faulty(name) != want {
			t.Errorf("Faulty(%s) = %v", name, !want)
		}
	}
}

// Hostile documents are refused with where and why; none is read whole
// into memory beyond its bound.
func TestParseSMIHostile(t *testing.T) {
	deep := "<nvidia_smi_log><gpu>" + strings.Repeat("<a>", 40) + strings.Repeat("</a>", 40) + "</gpu></nvidia_smi_log>"
	for name, tc := range map[string]struct{ doc, want string }{
		"deep":     {deep, "nvidia-smi -q -x:1:"},
		"huge":     {"<nvidia_smi_log>" + strings.Repeat(" ", MaxSMISize) + "</nvidia_smi_log>", "over the 4194304"},
		"cut":      {"<nvidia_smi_log><gpu><uuid>x</uuid>", "ends inside <gpu>"},
		"entity":   {`<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><nvidia_smi_log><gpu><uuid>&e;</uuid></gpu></nvidia_smi_log>`, "nvidia-smi -q -x:1:"},
		"too many": {"<nvidia_smi_log>" + strings.Repeat("<gpu></gpu>", MaxGPUs+1) + "</nvidia_smi_log>", "over 64 GPUs"},
	} {
		_, err := ParseSMI([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	if _, err := ParseSMI([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested over 32 deep") {
		t.Errorf("deep: %v", err)
	}
}

func TestParseXid(t *testing.T) {
	log := "[ 1.0] usb 1-1: new device\n[ 2.5] NVRM: Xid (PCI:0000:3b:00): 74, pid=77, NVLink: fatal error\n" +
		"[ 3.0] NVRM: Xid (0000:86:00.0): 48, An uncorrectable double bit error\n" + strings.Repeat("x", 3*MaxLine) + "\n"
	xs := ParseXid([]byte(log))
	if len(xs) != 2 || xs[0].Code != 74 || xs[0].PCI != "0000:3b:00" || xs[1].Code != 48 || xs[1].PCI != "0000:86:00" {
		t.Fatalf("xids = %+v", xs)
	}
	var many strings.Builder
	for i := 0; i < 3*MaxXid; i++ {
		many.WriteString("NVRM: Xid (PCI:0000:3b:00): 13, x\n")
	}
	if n := len(ParseXid([]byte(many.String()))); n != MaxXid {
		t.Errorf("kept %d Xid lines, want %d", n, MaxXid)
	}
}

// The job's command with stand-in programs: the first snapshot, then a
// second after the counters moved, the fault file and the log line; a
// fault file that is a link is never written through.
func TestJob(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	xml := string(readTestdata(t, "h100-nvidia-smi.xml"))
	smi := filepath.Join(bin, "nvidia-smi")
	dmesg := filepath.Join(bin, "dmesg")
	write := func(replay, xid string) {
		t.Helper()
		script := "#!/bin/sh\nif [ \"$1\" = nvlink ]; then printf 'GPU 0: H100 (UUID: GPU-c0596527-5e7d-083e-e3b0-b4e8c5894c12)\\n\\t Link 0: Replay Errors: " + replay + "\\n'; exit 0; fi\ncat <<'X'\n" + xml + "\nX\n"
		if err := os.WriteFile(smi, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dmesg, []byte("#!/bin/sh\nprintf '%s'\n"+"echo '"+xid+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{SMI: smi, Dmesg: dmesg, Node: "n1", JobID: "7"}
	write("0", "")
	before, after, fault, log := filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json"), filepath.Join(dir, "fault"), filepath.Join(dir, "faults.jsonl")
	var out strings.Builder
	if err := Job(context.Background(), o, before, "", "", "", &out); err != nil {
		t.Fatal(err)
	}
	write("5", "[ 9.0] NVRM: Xid (PCI:0000:00:06): 79, pid=1, GPU has fallen off the bus.")
	if err := Job(context.Background(), o, after, before, fault, log, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "failed under the cell on n1: GPU 0 (GPU-c0596527): nvlink.replay_errors 0→5") {
		t.Errorf("output:\n%s", out.String())
	}
	b, err := os.ReadFile(fault)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadReport(b)
	if err != nil || strings.Join(r.Counters(), ",") != "nvlink.replay_errors,xid" || r.Node != "n1" || r.JobID != "7" {
		t.Fatalf("fault file = %s (%v)", b, err)
	}
	if l, _ := os.ReadFile(log); string(l) != string(b) {
		t.Errorf("log = %q, want the fault's line", l)
	}
	// A link where the fault file goes: the file it points to is untouched.
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "log2")); err != nil {
		t.Fatal(err)
	}
	err = Job(context.Background(), o, filepath.Join(dir, "after2.json"), before, filepath.Join(dir, "fault2"), filepath.Join(dir, "log2"), &out)
	if err == nil {
		t.Error("appending through a link: no error")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target became %q", b)
	}
	// A first snapshot that is a link is never read through.
	if err := os.Symlink(before, filepath.Join(dir, "before-link")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Job(context.Background(), o, filepath.Join(dir, "after3.json"), filepath.Join(dir, "before-link"), filepath.Join(dir, "fault3"), "", &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fault3")); err == nil || !strings.Contains(out.String(), "no first snapshot to compare with") {
		t.Errorf("compared with a link's target:\n%s", out.String())
	}
	// No nvidia-smi: a note, no error.
	s := Take(context.Background(), Options{SMI: filepath.Join(dir, "none"), Dmesg: dmesg})
	if len(s.GPUs) != 0 || len(s.Notes) != 1 || s.Notes[0] != "no nvidia-smi on the node" {
		t.Errorf("without nvidia-smi: %+v", s)
	}
}

// The job's GPUs only: by minor number or UUID, all of them when the list
// names none (a job confined to its GPUs numbers them from 0); another
// job's GPU's Xid is left out, one of no known GPU kept.
func TestKeepJobGPUs(t *testing.T) {
	gpus := []GPU{{Index: 0, UUID: "GPU-a", PCI: "00000000:3B:00.0"}, {Index: 1, UUID: "GPU-b", PCI: "00000000:86:00.0"}}
	for visible, want := range map[string]string{"": "GPU-a,GPU-b", "1": "GPU-b", "GPU-a": "GPU-a", "5": "GPU-a,GPU-b", " 0 , GPU-b": "GPU-a,GPU-b"} {
		var got []string
		for _, g := range Keep(gpus, visible) {
			got = append(got, g.UUID)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("Keep(%q) = %v, want %s", visible, got, want)
		}
	}
	xs := []Xid{{PCI: "0000:3b:00", Code: 79}, {PCI: "0000:86:00", Code: 48}, {PCI: "0000:99:00", Code: 13}}
	got := othersLeftOut(xs, gpus, Keep(gpus, "1"))
	if len(got) != 2 || got[0].Code != 48 || got[1].Code != 13 {
		t.Errorf("Xids kept: %+v", got)
	}
}
