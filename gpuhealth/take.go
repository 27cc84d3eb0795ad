package gpuhealth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxSnapshotSize bounds a snapshot or fault file collect reads.
const MaxSnapshotSize = 2 << 20

// Help is kvsweep job health's help.
const Help = `Takes a snapshot of the health counters of this node's GPUs into --out
(JSON): nvidia-smi -q -x (ECC errors, retired pages, remapped rows, clock
event reasons and their counters), nvidia-smi nvlink -e (each link's
error counters) and the kernel log's NVRM Xid lines (dmesg). With
--before, it compares the two snapshots: a counter whose rise means the
hardware failed under the cell (an Xid, an NVLink error, an uncorrectable
ECC error, a retired page or a remapped row) is written to --fault and
appended as a line to --log, and the job's collect and watch class the
cell an infra failure. What cannot be read is a note in the snapshot;
nothing here fails the job. $KVSWEEP_NVIDIA_SMI and $KVSWEEP_DMESG name
other programs than nvidia-smi and dmesg.`

// Options of Take and Check.
type Options struct {
	SMI, Dmesg  string // programs: "" is nvidia-smi and dmesg
	Node, JobID string
	// Visible is the job's GPUs (CUDA_VISIBLE_DEVICES: indices or UUIDs,
	// comma-separated); empty: all of the node's. See Keep.
	Visible string
	Timeout time.Duration // each command's (0: 60 s)
	Now     func() time.Time
}

// Take reads the node's GPUs' health counters now. What cannot be read
// is a note in the snapshot, never an error.
func Take(ctx context.Context, o Options) *Snapshot {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	s := &Snapshot{Node: o.Node, JobID: o.JobID, T: now().UnixMilli()}
	smi := cmp.Or(o.SMI, "nvidia-smi")
	out, err := run(ctx, o, MaxSMISize, smi, "-q", "-x")
	switch {
	case errors.Is(err, exec.ErrNotFound):
		s.Notes = append(s.Notes, "no nvidia-smi on the node")
	case err != nil:
		s.Notes = append(s.Notes, fmt.Sprintf("%s -q -x: %v", smi, err))
	default:
		if s.GPUs, err = ParseSMI(out); err != nil {
			s.Notes = append(s.Notes, err.Error())
		}
	}
	all := s.GPUs
	s.GPUs = Keep(s.GPUs, o.Visible)
	if len(s.GPUs) > 0 {
		if out, err := run(ctx, o, MaxTextSize, smi, "nvlink", "-e"); err == nil {
			ParseNVLink(out, s.GPUs)
		} else {
			s.Notes = append(s.Notes, fmt.Sprintf("%s nvlink -e: %v", smi, err))
		}
	}
	if out, err := run(ctx, o, 64<<20, cmp.Or(o.Dmesg, "dmesg")); err == nil {
		s.Xid, s.XidRead = othersLeftOut(ParseXid(tail(out, MaxTextSize)), all, s.GPUs), true
	} else if len(s.GPUs) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("kernel log: %v", err))
	}
	return s
}

// Keep is the GPUs of visible (CUDA_VISIBLE_DEVICES: minor numbers or
// UUIDs), all of them when visible is empty or names none of them (a
// job confined to its GPUs numbers them from 0, whatever their minor
// numbers: nvidia-smi then shows only those).
func Keep(gpus []GPU, visible string) []GPU {
	if strings.TrimSpace(visible) == "" {
		return gpus
	}
	want := map[string]bool{}
	for _, v := range strings.Split(visible, ",") {
		want[strings.TrimSpace(v)] = true
	}
	var out []GPU
	for _, g := range gpus {
		if want[g.UUID] || want[strconv.Itoa(g.Index)] {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return gpus
	}
	return out
}

// othersLeftOut drops the Xid lines of the node's GPUs that are not the
// job's (all but kept): another job's GPU failing is not this cell's.
func othersLeftOut(xs []Xid, all, kept []GPU) []Xid {
	out := xs[:0]
	for _, x := range xs {
		idx, _ := gpuOf(all, x.PCI)
		if mine, _ := gpuOf(kept, x.PCI); idx < 0 || mine >= 0 {
			out = append(out, x)
		}
	}
	return out
}

// tail is the last n bytes of b, from a line's start.
func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// run runs a program with a time limit, its output bounded to max bytes.
func run(ctx context.Context, o Options, max int64, prog string, args ...string) ([]byte, error) {
	path, err := exec.LookPath(prog)
	if err != nil {
		return nil, exec.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(o.Timeout, 60*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &capped{w: &stderr, n: 512}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	out, rerr := io.ReadAll(io.LimitReader(stdout, max+1))
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	switch {
	case rerr != nil:
		return nil, rerr
	case int64(len(out)) > max:
		return nil, fmt.Errorf("output over %d bytes", max)
	case werr != nil:
		msg := strings.Join(strings.Fields(stderr.String()), " ")
		return nil, fmt.Errorf("%v %s", werr, msg)
	}
	return out, nil
}

type capped struct {
	w *bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.w.Len(); room > 0 {
		c.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// ReadSnapshot reads a snapshot file's bytes.
func ReadSnapshot(b []byte) (*Snapshot, error) {
	if len(b) > MaxSnapshotSize {
		return nil, fmt.Errorf("%d bytes, over %d", len(b), MaxSnapshotSize)
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ReadReport reads a fault file's (or a line of the fault log's) bytes.
func ReadReport(b []byte) (*Report, error) {
	if len(b) > MaxSnapshotSize {
		return nil, fmt.Errorf("%d bytes, over %d", len(b), MaxSnapshotSize)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Job is what kvsweep job health does: a snapshot into out; with before,
// the comparison, its faults written to fault and appended to log. It
// says what it found on w.
func Job(ctx context.Context, o Options, out, before, fault, log string, w io.Writer) error {
	s := Take(ctx, o)
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := writeFile(out, append(b, '\n')); err != nil {
		return err
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "kvsweep job health: %s\n", n)
	}
	if before == "" {
		return nil
	}
	prev, err := readNoFollow(before)
	if err != nil {
		fmt.Fprintf(w, "kvsweep job health: no first snapshot to compare with: %v\n", err)
		return nil
	}
	first, err := ReadSnapshot(prev)
	if err != nil {
		fmt.Fprintf(w, "kvsweep job health: %s: %v\n", before, err)
		return nil
	}
	r := Compare(first, s)
	for _, c := range r.Changes {
		fmt.Fprintf(w, "kvsweep job health: %s\n", c)
	}
	if len(r.Faults()) == 0 || fault == "" {
		return nil
	}
	fmt.Fprintf(w, "kvsweep job health: the GPUs failed under the cell %s\n", r.Evidence())
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	return errors.Join(writeFile(fault, line), appendLine(log, line))
}

// writeFile writes path whole through a temporary file beside it, never
// through a link.
func writeFile(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Close()); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func appendLine(path string, b []byte) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Close())
}

// readNoFollow reads a regular file of at most MaxSnapshotSize bytes,
// never through a link.
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSnapshotSize+1))
	if err == nil && len(b) > MaxSnapshotSize {
		err = fmt.Errorf("%s is over %d bytes", path, MaxSnapshotSize)
	}
	return b, err
}
