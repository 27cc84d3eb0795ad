package gpustat

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Command is the nvidia-smi invocation that samples every interval (at
// least 100 ms, nvidia-smi's -lms), smi being the program.
func Command(smi string, interval time.Duration) []string {
	return []string{smi, "--query-gpu=" + strings.Join(Fields, ","), "--format=csv,noheader,nounits",
		"-lms", strconv.FormatInt(max(interval, 100*time.Millisecond).Milliseconds(), 10)}
}

// Sampler runs nvidia-smi's stream and writes its rows to W as Samples.
type Sampler struct {
	SMI      string        // the program: a path, or a name looked up in PATH ("nvidia-smi")
	Interval time.Duration // between samples
	W        io.Writer
	Now      func() time.Time // nil: time.Now
}

// Run samples until ctx ends, nvidia-smi exits, or MaxSamples rows are
// kept. What goes wrong is a note line, never an error: the cell runs on
// without its GPU figures. The error is only the writer's.
func (s *Sampler) Run(ctx context.Context) error {
	enc := json.NewEncoder(s.W)
	note := func(format string, a ...any) error {
		return enc.Encode(Sample{T: s.now().UnixMilli(), GPU: -1, Note: fmt.Sprintf(format, a...)})
	}
	path, err := exec.LookPath(s.SMI)
	if err != nil {
		return note("no GPU samples: %s is not on this node (%v)", s.SMI, errors.Unwrap(err))
	}
	argv := Command(path, s.Interval)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &limited{b: &stderr, n: 4096}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return note("no GPU samples: %s did not start: %v", path, err)
	}
	ended, werr := s.rows(out, enc, note)
	if !ended {
		_ = cmd.Cancel()
	}
	_, _ = io.Copy(io.Discard, out)
	err = cmd.Wait()
	if werr != nil || !ended || ctx.Err() != nil {
		return werr
	}
	msg := strings.Join(strings.Fields(stderr.String()), " ")
	if err != nil || msg != "" {
		return note("%s ended: %v %s", path, err, clip(msg))
	}
	return nil
}

// rows reads nvidia-smi's stdout until it ends (ended) or MaxSamples
// rows are kept; a row that does not parse is a note (at most MaxNotes).
func (s *Sampler) rows(out io.Reader, enc *json.Encoder, note func(string, ...any) error) (ended bool, _ error) {
	r := bufio.NewReaderSize(out, MaxLine+1)
	kept, notes := 0, 0
	for line := 1; ; line++ {
		b, err := r.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		for errors.Is(err, bufio.ErrBufferFull) { // the rest of a long line
			_, err = r.ReadSlice('\n')
		}
		if len(b) == 0 && err != nil {
			return true, nil
		}
		row := strings.TrimRight(string(b), "\r\n")
		var smp Sample
		var perr error
		if long {
			perr = fmt.Errorf("nvidia-smi:%d:1: a row over %d bytes", line, MaxLine)
		} else {
			smp, perr = ParseRow(row, line)
		}
		if perr != nil {
			if notes++; notes <= MaxNotes {
				if err := note("%v", perr); err != nil {
					return false, err
				}
			}
			continue
		}
		smp.T = s.now().UnixMilli()
		if err := enc.Encode(smp); err != nil {
			return false, err
		}
		if kept++; kept == MaxSamples {
			return false, note("sampling stopped at %d rows (the limit)", MaxSamples)
		}
	}
}

func (s *Sampler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// limited keeps the first n bytes written to it and drops the rest.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Help is kvsweep job gpu-sample's help.
const Help = `Runs nvidia-smi --query-gpu (the fields docs/results.md lists) as one
stream, a row a GPU every --interval, checks each row, and writes it to
--out (replaced) as a JSON line, unbuffered, so a job killed keeps what
was sampled. A node without nvidia-smi (looked up in PATH, or
$KVSWEEP_NVIDIA_SMI), a row that does not parse, or nvidia-smi's exit is
a note line; nothing here fails. Runs until TERM or INT.`

// SampleFile samples into the file at path (replaced; a link there is
// refused, never followed: the cell directory is the harness's too) until ctx ends:
// kvsweep job gpu-sample. The program is $KVSWEEP_NVIDIA_SMI, or
// nvidia-smi in PATH.
func SampleFile(ctx context.Context, path string, interval time.Duration) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	smi := cmp.Or(os.Getenv("KVSWEEP_NVIDIA_SMI"), "nvidia-smi")
	err = (&Sampler{SMI: smi, Interval: interval, W: f}).Run(ctx)
	return errors.Join(err, f.Close())
}
