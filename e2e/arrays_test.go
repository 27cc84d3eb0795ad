package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// A job with more cells than the cluster's MaxArraySize, read from the
// slurm.conf the Slurm commands read (no scontrol is asked), is submitted
// as arrays of at most that many tasks, each after the first with an index
// offset, and Slurm holds one task per cell. The slurm.conf here is a copy
// of the test cluster's with MaxArraySize 200 (the controller allows 1001).
func TestArraysSplitAtMaxArraySize(t *testing.T) {
	c := clusters(t)[0]
	t.Parallel()
	tmp := t.TempDir()
	repeats := make([]string, 450)
	for i := range repeats {
		repeats[i] = fmt.Sprintf(`"%d"`, i)
	}
	path := writeSpec(t, tmp, fmt.Sprintf(`version: 1
name: split
container: {runtime: none}
harness: {command: ["true"]}
topologies: {t: {kind: aggregated, resources: {cpus_per_task: 1, mem: 10M, time: 1m}}}
geometries: {g: {}}
matrix:
  engine: [vllm]
  topology: [t]
  geometry: [g]
  case: [TC-01]
  repeat: [%s]
`, strings.Join(repeats, ", ")))
	dir := filepath.Join(tmp, "sweep")
	mustKvsweep(t, c, "render", path, "--out", dir, "--sweep-id", fmt.Sprintf("split-%d", time.Now().UnixNano()%1e9))
	defer cancelSweep(t, c, dir)
	m, err := sweep.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(c.conf)
	if err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(t.TempDir(), "slurm.conf")
	conf = []byte(strings.ReplaceAll(string(conf), "MaxArraySize=1001", "MaxArraySize=200"))
	if !strings.Contains(string(conf), "MaxArraySize=200") {
		t.Fatalf("%s sets no MaxArraySize=1001 to change", c.conf)
	}
	if err := os.WriteFile(small, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	// scontrol on PATH fails: the limit must come from slurm.conf.
	shims := t.TempDir()
	if err := os.WriteFile(filepath.Join(shims, "scontrol"), []byte("#!/bin/sh\necho scontrol was called >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errs, err := kvsweep(t, c, []string{"PATH=" + shims + ":" + os.Getenv("PATH"), "SLURM_CONF=" + small}, "submit", dir, "--scheduler", "slurm", "--hold")
	if err != nil {
		t.Fatalf("submit: %v\n%s%s", err, out, errs)
	}
	recs, err := sweep.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sweep.Submissions(recs) {
		if s.JobID == "" {
			t.Errorf("submission %d unconfirmed", s.Intent.Seq)
		}
		got = append(got, fmt.Sprintf("%s+%d", s.Intent.Indices, s.Intent.Offset))
	}
	if want := []string{"0-199+0", "200-399+200", "400-449+400"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("submissions %v, want %v", got, want)
	}
	total := 0
	for _, ids := range slurmTasks(t, c, m.SweepID) {
		total += len(ids)
	}
	if total != len(m.Cells) {
		t.Errorf("Slurm holds %d tasks for %d cells", total, len(m.Cells))
	}
}
