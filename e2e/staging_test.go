package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/testrun"
)

// One import per image per cluster: a 50-cell sweep under pyxis and one
// under enroot each import the image once (counted by the argv wrappers
// scripts/runtime-env.sh puts first on the cluster's PATH), every cell
// runs the staged file with its provenance checked in the job, and a
// second sweep sharing the staging directory imports nothing.
func TestStagingImportsOnce(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, revs := buildTestImage(t, c)
	image := ref + "@" + digest
	expect := fmt.Sprintf("{dynamo: %s, vllm_adapter: %s}", revs.Commit("dynamo"), revs.Commit("vllm_adapter"))
	for _, rt := range []string{"pyxis", "enroot"} {
		t.Run(rt, func(t *testing.T) {
			staging := filepath.Join(t.TempDir(), "images")
			mark := argvMark(t)
			dir := stagedSweep(t, c, rt, image, expect, staging, 50)
			checkStagedRun(t, dir, 50, digest, revs)
			if n := importsSince(t, mark, digest); n != 1 {
				t.Errorf("the 50-cell sweep imported the image %d times, want 1", n)
			}
			staged := filepath.Join(staging, "sha256-"+strings.TrimPrefix(digest, "sha256:")+".sqsh")
			if fi, err := os.Stat(staged); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("no staged image: %v", err)
			}
			mark = argvMark(t)
			dir = stagedSweep(t, c, rt, image, expect, staging, 4)
			checkStagedRun(t, dir, 4, digest, revs)
			if n := importsSince(t, mark, digest); n != 0 {
				t.Errorf("a second sweep of the staged image imported it %d times, want 0", n)
			}
			out := mustKvsweep(t, c, "image", "prune", "--staging", staging, "--unused-for", "0s")
			if !strings.Contains(out, "removed 1 of 1 files") {
				t.Errorf("prune of the ended sweeps' image:\n%s", out)
			}
		})
	}
}

// Two sweeps submitted at once share the staging directory: one import
// between them, every cell of both COMPLETED.
func TestStagingConcurrentSweeps(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, revs := buildTestImage(t, c)
	image := ref + "@" + digest
	staging := filepath.Join(t.TempDir(), "images")
	mark := argvMark(t)
	var wg sync.WaitGroup
	dirs := make([]string, 2)
	for i := range dirs {
		wg.Go(func() { dirs[i] = stagedSweep(t, c, "pyxis", image, "{}", staging, 4) })
	}
	wg.Wait()
	for _, dir := range dirs {
		checkStagedRun(t, dir, 4, digest, revs)
	}
	if n := importsSince(t, mark, digest); n != 1 {
		t.Errorf("two sweeps at once imported the image %d times, want 1", n)
	}
}

// stagedSweep runs cells cells of the test harness in image under
// runtime rt with the given staging directory, waits, and collects.
func stagedSweep(t testing.TB, c cluster, rt, image, expect, staging string, cells int) string {
	t.Helper()
	tmp := t.TempDir()
	// One cell a geometry.
	geoms, names := make([]string, cells), make([]string, cells)
	for i := range geoms {
		names[i] = fmt.Sprintf("g%02d", i+1)
		geoms[i] = fmt.Sprintf("  %s: {flags: {model: m%d}}", names[i], i+1)
	}
	spec := fmt.Sprintf(`version: 1
name: staged-%s
container: {runtime: %s, image: %q, expect: %s, staging: %q}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 100M, time: 10m}}
geometries:
%s
matrix: {engine: [vllm], topology: [aggregated], geometry: [%s], case: [TC-01]}
`, rt, rt, image, expect, staging, strings.Join(geoms, "\n"), strings.Join(names, ", "))
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	id := fmt.Sprintf("st-%s-%d", rt, time.Now().UnixNano()%1e9)
	t.Cleanup(func() { cancelSweep(t, c, dir) })
	if out, errs, err := kvsweep(t, c, nil, "run", path, "--out", dir, "--sweep-id", id, "--scheduler", "slurm", "--wait", "--interval", "1s"); err != nil {
		t.Errorf("kvsweep run: %v\n%s%s", err, out, errs)
	}
	cs, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cs {
		if s.State != scheduler.StateCompleted {
			t.Errorf("%s under %s: %s exit %d\n%s", s.Name, rt, s.State, s.ExitCode, cellLog(dir, s))
		}
	}
	mustKvsweep(t, c, "collect", dir, "--store", filepath.Join(tmp, "history.db"))
	return dir
}

// checkStagedRun checks the collected run: n cells, each OK in the image
// digest names, recording the commits the image was built from.
func checkStagedRun(t testing.TB, dir string, n int, digest string, revs *provenance.SourceRevisions) {
	t.Helper()
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != n {
		t.Errorf("%d cells collected, want %d", len(run.Cells), n)
	}
	for _, cell := range run.Cells {
		if cell.Outcome != testrun.OK || cell.Image.Digest != digest {
			t.Errorf("%s: %s %q in %q, want OK in %s", cell.Name, cell.Outcome, cell.Detail, cell.Image.Digest, digest)
		}
		if ms := provenance.Compare(cell.Image.SourceRevisions, revs); len(ms) != 0 {
			t.Errorf("%s: the row's revisions differ from the image's: %v", cell.Name, ms)
		}
		// The fingerprint of a node without GPUs: said, and nothing failed.
		if hw := cell.Hardware; hw == nil || hw.Node == "" || hw.Kernel == "" || hw.Note != "no nvidia-smi on the node" {
			t.Errorf("%s: hardware %+v, want the node, its kernel and no nvidia-smi", cell.Name, hw)
		}
	}
}

// argvMark is where the argv logs of enroot and apptainer end now.
func argvMark(t testing.TB) map[string]int64 {
	t.Helper()
	dir := os.Getenv("KVSWEEP_ARGV_LOGS")
	if dir == "" {
		t.Fatal("KVSWEEP_ARGV_LOGS is not set: scripts/runtime-env.sh env exports it (the README's test command)")
	}
	m := map[string]int64{}
	for _, tool := range []string{"enroot", "apptainer"} {
		if fi, err := os.Stat(filepath.Join(dir, tool+".log")); err == nil {
			m[tool] = fi.Size()
		}
	}
	return m
}

// importsSince counts the imports of the image with digest that enroot
// (import, or pyxis's load) and apptainer (pull) were asked for since
// mark.
func importsSince(t testing.TB, mark map[string]int64, digest string) int {
	t.Helper()
	n := 0
	for tool, verbs := range map[string][]string{"enroot": {"import", "load"}, "apptainer": {"pull"}} {
		b, err := os.ReadFile(filepath.Join(os.Getenv("KVSWEEP_ARGV_LOGS"), tool+".log"))
		if err != nil || int64(len(b)) < mark[tool] {
			continue
		}
		for _, line := range strings.Split(string(b[mark[tool]:]), "\n") {
			verb, _, _ := strings.Cut(line, " ")
			if strings.Contains(line, digest) && (verb == verbs[0] || len(verbs) > 1 && verb == verbs[1]) {
				n++
			}
		}
	}
	return n
}

// BenchmarkStaging: a sweep under pyxis with the image staged (a fresh
// staging directory each time, so the one import is counted) and with
// container.staging: none (pyxis imports it in every job step): imports
// per sweep, and the time from submit to the first harness start.
// bench/run.sh staging runs it.
//
//	go test ./e2e -run XXX -bench Staging -benchtime 1x -count 5
func BenchmarkStaging(b *testing.B) {
	c := clusters(b)[0]
	ref, digest, revs := buildTestImage(b, c)
	image := ref + "@" + digest
	cells := 20
	for _, mode := range []string{"staged", "none"} {
		b.Run(mode, func(b *testing.B) {
			var imports, first float64
			for range b.N {
				staging := filepath.Join(b.TempDir(), "images")
				if mode == "none" {
					staging = "none"
				}
				mark := argvMark(b)
				start := time.Now()
				dir := stagedSweep(b, c, "pyxis", image, "{}", staging, cells)
				checkStagedRun(b, dir, cells, digest, revs)
				imports += float64(importsSince(b, mark, digest))
				var earliest time.Time
				starts, _ := filepath.Glob(filepath.Join(dir, "cells", "*", "harness-started"))
				for _, s := range starts {
					if fi, err := os.Stat(s); err == nil && (earliest.IsZero() || fi.ModTime().Before(earliest)) {
						earliest = fi.ModTime()
					}
				}
				first += earliest.Sub(start).Seconds()
			}
			b.ReportMetric(imports/float64(b.N), "imports/sweep")
			b.ReportMetric(first/float64(b.N), "s-to-first-harness")
			b.ReportMetric(float64(cells), "cells")
		})
	}
}
