package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// progressSweep writes a spec whose two cells wait for the file release,
// so a test can look at the progress while they run, whatever the load.
func progressSweep(t *testing.T, dir string) (spec, release string) {
	release = filepath.Join(dir, "release")
	spec = filepath.Join(dir, "spec.yaml")
	src := `version: 1
name: progress
scheduler: local
container: {runtime: none}
harness:
  command: [bash, -c, 'while [ ! -e ` + release + ` ]; do sleep 0.1; done']
topologies: {aggregated: {resources: {time: 1h}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01], n: ["1", "2"]}
`
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// Should the awaited output never come, the cells end anyway and the
	// test fails showing what came instead of hanging.
	guard := time.AfterFunc(3*time.Minute, func() { _ = os.WriteFile(release, nil, 0o644) })
	t.Cleanup(func() { guard.Stop() })
	return spec, release
}

func buildKvsweep(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kvsweep")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// readUntil reads r until re matches what was read, returning it all; the
// rest of r is drained into the returned channel.
func readUntil(t *testing.T, r io.Reader, re *regexp.Regexp) (string, <-chan string) {
	t.Helper()
	var seen strings.Builder
	br := bufio.NewReader(r)
	buf := make([]byte, 4096)
	for !re.MatchString(seen.String()) {
		n, err := br.Read(buf)
		seen.Write(buf[:n])
		if err != nil {
			t.Fatalf("output ended before %s appeared:\n%s", re, seen.String())
		}
	}
	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(br)
		rest <- string(b)
	}()
	return seen.String(), rest
}

// On a terminal the local executor draws a live bar with the counts, and
// leaves it at 100% when the cells are done. Run in a real pty (script).
func TestProgressBarInPty(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script (util-linux) is needed for the pty: %v", err)
	}
	bin := buildKvsweep(t)
	dir := t.TempDir()
	spec, release := progressSweep(t, dir)
	cmdline := bin + " run " + spec + " --out " + filepath.Join(dir, "sw") + " --sweep-id bar-1 --parallel 2"
	cmd := exec.Command("script", "-qfec", cmdline, "/dev/null")
	cmd.Env = append(os.Environ(), "TERM=xterm", "KVSWEEP_STORE="+filepath.Join(dir, "h.db"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The bar while both cells run: 0 of 2 done, the counts beside it.
	running, rest := readUntil(t, out, regexp.MustCompile(`0% \|.*\| \(0/2.*2 RUNNING`))
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tail := <-rest
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s%s", err, running, tail)
	}
	if !regexp.MustCompile(`100% \|.*\| \(2/2.*2 COMPLETED`).MatchString(tail) {
		t.Errorf("the bar did not end at 100%% with the counts:\n%q", tail)
	}
	if !strings.Contains(tail, "local executor finished 2 cells: 2 COMPLETED") {
		t.Errorf("no summary line:\n%s", tail)
	}
	if !strings.Contains(running, "\r") {
		t.Errorf("the bar is not redrawn in place:\n%q", running)
	}
	// Watching a sweep that has ended draws no bar: nothing to wait for.
	watch := exec.Command("script", "-qfec", bin+" status "+filepath.Join(dir, "sw")+" --watch --interval 100ms", "/dev/null")
	watch.Env = append(os.Environ(), "TERM=xterm")
	b, err := watch.Output()
	if err != nil {
		t.Fatalf("status --watch: %v\n%s", err, b)
	}
	if strings.Contains(string(b), "%") || !strings.Contains(string(b), "2 cells: 2 COMPLETED") {
		t.Errorf("status --watch of an ended sweep:\n%q", b)
	}
}

// Not on a terminal: one line per change, no bar; --quiet: nothing.
func TestProgressLinesAndQuiet(t *testing.T) {
	bin := buildKvsweep(t)
	for _, quiet := range []bool{false, true} {
		dir := t.TempDir()
		spec, release := progressSweep(t, dir)
		args := []string{"run", spec, "--out", filepath.Join(dir, "sw"), "--sweep-id", "lines-1", "--parallel", "2"}
		if quiet {
			args = append(args, "--quiet")
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "KVSWEEP_STORE="+filepath.Join(dir, "h.db"))
		errPipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		var stderr string
		if !quiet {
			seen, rest := readUntil(t, errPipe, regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d 2 RUNNING\n`))
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			stderr = seen + <-rest
		} else {
			b, _ := io.ReadAll(errPipe)
			stderr = string(b)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr)
		}
		switch {
		case quiet && stderr != "":
			t.Errorf("--quiet printed progress:\n%s", stderr)
		case !quiet && !regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d 2 COMPLETED$`).MatchString(stderr):
			t.Errorf("no line for the end:\n%s", stderr)
		case strings.Contains(stderr, "%"):
			t.Errorf("a bar was drawn on a pipe:\n%s", stderr)
		}
	}
}
