package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

// Hostile values, rendered into a job script and executed: the harness
// stand-in receives each byte for byte, and nothing in them runs.
func TestInjection(t *testing.T) {
	tmp := t.TempDir()
	mark := filepath.Join(tmp, "executed")
	hostile := []string{
		"$(touch " + mark + ")",
		"`touch " + mark + "`",
		"; touch " + mark,
		"&& touch " + mark + " &",
		"it's",
		`say "hi" \"there\"`,
		"line1\nline2\n",
		"-rf",
		"--flag=$(touch " + mark + ")",
		"${HOME} $HOME * ? [a] ~ \\ & | > <",
		"\t leading and trailing space \t",
		"",
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }

	// The stand-in records its argv NUL-separated and one environment value.
	harness := filepath.Join(tmp, "harness")
	writeFile(t, harness, "#!/bin/sh\nprintf '%s\\0' \"$@\" >\"$KVSWEEP_CELL_DIR/argv.out\"\nprintf '%s' \"$EVIL\" >\"$KVSWEEP_CELL_DIR/env.out\"\npwd >\"$KVSWEEP_CELL_DIR/pwd.out\"\n", 0o755)
	workdir := filepath.Join(tmp, "work $(touch "+mark+") 'q' & x")
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		t.Fatal(err)
	}

	var words []string
	for _, h := range hostile {
		words = append(words, q(h))
	}
	spec := fmt.Sprintf(`version: 1
name: inject
container: {runtime: none, workdir: %s}
env:
  set: {EVIL: %s}
harness:
  command: [%s, %s, "{{.Params.extra}}", "{{.CellDir}}/results"]
  cases_flag: ""
topologies:
  aggregated: {resources: {time: 1m}}
geometries:
  g:
    flags: {%s: %s}
matrix:
  engine: [vllm]
  topology: [aggregated]
  geometry: [g]
  case: [TC-01]
  include:
    - {engine: vllm, extra: %s}
`, q(workdir), q(hostile[0]), q(harness), strings.Join(words, ", "), q("--geo"), q(hostile[2]), q(hostile[4]))

	s, cells := load(t, "inject.yaml", []byte(spec))
	// The sweep directory's own path is hostile too: the cell directory is
	// substituted into argv at run time.
	dir := filepath.Join(tmp, "sweep & $(touch "+mark+")")
	m, err := Render(s, []byte(spec), cells, dir, Options{SweepID: "inject"})
	if err != nil {
		t.Fatal(err)
	}
	shellcheck(t, filepath.Join(dir, m.Jobs[0].Script))

	cmd := exec.Command("bash", filepath.Join(dir, m.Jobs[0].Script))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURM_SUBMIT_DIR="+dir, "SLURM_JOB_ID=7", "SLURM_ARRAY_JOB_ID=7", "SLURM_ARRAY_TASK_ID=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "cells", cells[0].ID, "slurm-7_0.out"))
		t.Fatalf("job failed: %v\n%s\n%s", err, out, log)
	}

	cellDir := filepath.Join(dir, "cells", cells[0].ID)
	got := bytes.Split(readFile(t, filepath.Join(cellDir, "argv.out")), []byte{0})
	got = got[:len(got)-1]
	want := append(append([]string{}, hostile...), hostile[4], cellDir+"/results", "--geo", hostile[2])
	if len(got) != len(want) {
		t.Fatalf("harness got %d args, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("arg %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if env := string(readFile(t, filepath.Join(cellDir, "env.out"))); env != hostile[0] {
		t.Errorf("EVIL: got %q, want %q", env, hostile[0])
	}
	if pwd := strings.TrimSpace(string(readFile(t, filepath.Join(cellDir, "pwd.out")))); pwd != workdir {
		t.Errorf("workdir: got %q, want %q", pwd, workdir)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a hostile value was executed")
	}
	// The script and the Go readers agree on the formats they share: the
	// cell table the script read its argv from, and the exit marker it wrote.
	entries, err := sweep.ReadCellTable(dir, &m.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if entries[0].ID != cells[0].ID || strings.Join(entries[0].Argv, "\x00") != strings.Join(cells[0].Argv, "\x00") {
		t.Errorf("cell table: Go reads %q, the renderer wrote %q", entries[0].Argv, cells[0].Argv)
	}
	mk, ok, err := sweep.ReadExitMarker(dir, cells[0].ID)
	if err != nil || !ok || mk.ExitCode != 0 || mk.JobID != "7" || mk.ArrayJobID != "7" || mk.ArrayTaskID != "0" || mk.Host == "" || mk.Started.IsZero() || mk.Finished.Before(mk.Started) {
		t.Errorf("exit marker: %+v %v %v", mk, ok, err)
	}
}
func writeFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
