package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/imagebuild"
	"github.com/kvsweep/kvsweep/provenance"
	"github.com/kvsweep/kvsweep/testrun"
)

// prLane is a pull request's lane as .github/workflows/pr.yml runs it,
// without GitHub: the current main image resolved from its tag to a
// digest, the pull request's KVCR commit layered onto that image, and
// kvsweep ci of a lane spec in the layered image under pyxis, the job
// checking the image records the pull request's commit. main is the tag
// the image workflow moves, digest what it names, revs what that image
// records, kvcr the KVCR checkout the image was built from.
func prLane(t *testing.T, c cluster, main, digest string, revs *provenance.SourceRevisions, kvcr string) {
	t.Helper()
	reg, addr := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR")
	tmp := t.TempDir()
	// The current main image, pinned: what every later step runs.
	out, errs, err := kvsweep(t, c, nil, "image", "resolve", main, "--insecure-registry")
	if err != nil || strings.TrimSpace(out) != main+"@"+digest || !strings.Contains(errs, revs.Commit("dynamo")) {
		t.Fatalf("image resolve %s: %v\nstdout %q, want %q\n%s", main, err, out, main+"@"+digest, errs)
	}
	current := strings.TrimSpace(out)

	// The pull request: one commit on KVCR that changes what it installs.
	sha := commitIn(t, kvcr, "kvcr/__init__.py", "TIER = \"kvcr\"\nPR = 7\n", "PR 7: the tier says which pull request it is")
	prTag := reg + "/qs/kvcr:pr-7"
	out, errs, err = kvsweep(t, c, nil, "image", "layer", "--on", current, "--kvcr", kvcr, "--push", prTag,
		"--insecure-registry", "--buildkit-addr", addr, "--media-types", "docker", "--progress", "plain")
	if err != nil {
		t.Fatalf("image layer: %v\n%s%s", err, out, lastLines(errs, 60))
	}
	m := regexp.MustCompile(`(?m)^digest (sha256:[0-9a-f]{64})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("image layer printed no digest:\n%s", out)
	}
	prImage := prTag + "@" + m[1]
	var in imagebuild.Inspection
	js := mustKvsweep(t, c, "image", "inspect", prImage, "--insecure-registry", "--format", "json")
	if err := json.Unmarshal([]byte(js), &in); err != nil || in.Revisions == nil {
		t.Fatalf("image inspect: %v\n%s", err, js)
	}
	layered := in.Revisions
	if layered.Commit("kvcr") != sha || layered.Commit("dynamo") != revs.Commit("dynamo") ||
		layered.Commit("vllm_adapter") != revs.Commit("vllm_adapter") || layered.Base != revs.Base {
		t.Errorf("the layered image records %s on %+v, want kvcr@%s and the rest as %s", layered.Short(), layered.Base, sha[:7], revs.Short())
	}
	if l := layered.LayeredOn; l == nil || l.Name != main || l.Digest != digest || strings.Join(l.Replaced, ",") != "kvcr" {
		t.Errorf("layered_on is %+v, want %s@%s replacing kvcr", l, main, digest)
	}
	if in.User != "1000:1000" {
		t.Errorf("the layered image runs as %q, want the main image's user 1000:1000", in.User)
	}

	spec := writeSpec(t, tmp, fmt.Sprintf(`version: 1
name: pr-lane
container: {runtime: pyxis, image: %q, staging: %q}
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 100M, time: 10m}}
geometries: {g1: {flags: {model: m1}}, g2: {flags: {model: m2}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g1, g2], case: [TC-01]}
`, main, filepath.Join(tmp, "images")))
	// The lane: the layered image, the pull request's commit expected.
	lane := filepath.Join(tmp, "lane")
	if out, code := ciJob(t, c, lane, spec, "--image", prImage, "--expect", "kvcr="+sha, "--insecure-registry", "--baseline", "none"); code != 0 {
		t.Fatalf("kvsweep ci of the pull request's lane exited %d:\n%s", code, out)
	}
	defer cancelSweep(t, c, filepath.Join(lane, "sweep"))
	checkPRRows(t, filepath.Join(lane, "sweep"), testrun.OK, m[1], sha, digest)

	// The main image does not record the pull request's commit: the same
	// lane in it fails each cell on provenance, naming kvcr.
	wrong := filepath.Join(tmp, "wrong")
	out, code := ciJob(t, c, wrong, spec, "--image", current, "--expect", "kvcr="+sha, "--insecure-registry", "--baseline", "none")
	defer cancelSweep(t, c, filepath.Join(wrong, "sweep"))
	if code != 3 {
		t.Errorf("the lane in the main image exited %d, want 3:\n%s", code, out)
	}
	checkPRRows(t, filepath.Join(wrong, "sweep"), testrun.ProvenanceMismatch, digest,
		"kvcr: the image has "+revs.Commit("kvcr")+", the spec expects "+sha, "")
}

// checkPRRows checks every collected row of the sweep in dir: its outcome,
// the digest it ran, the KVCR commit it records (or, for a failed check,
// its detail) and the image it was layered on ("" for none).
func checkPRRows(t *testing.T, dir string, outcome, digest, kvcr, on string) {
	t.Helper()
	run, err := testrun.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 2 {
		t.Errorf("%d cells collected, want 2", len(run.Cells))
	}
	for _, cell := range run.Cells {
		rv := cell.Image.SourceRevisions
		if outcome == testrun.ProvenanceMismatch {
			if cell.Outcome != outcome || !strings.Contains(cell.Detail, kvcr) {
				t.Errorf("%s: %s %q, want %s %q", cell.Name, cell.Outcome, cell.Detail, outcome, kvcr)
			}
			continue
		}
		if cell.Outcome != outcome || cell.Image.Digest != digest || rv.Commit("kvcr") != kvcr {
			t.Errorf("%s: %s %q in %s recording kvcr %s; want %s in %s recording %s", cell.Name, cell.Outcome, cell.Detail,
				cell.Image.Digest, rv.Commit("kvcr"), outcome, digest, kvcr)
		}
		if on != "" && (rv == nil || rv.LayeredOn == nil || rv.LayeredOn.Digest != on) {
			t.Errorf("%s: the row does not name the image the layer is on (%s)", cell.Name, on)
		}
	}
}

// commitIn writes one file in the checkout at dir, commits it and returns
// the commit.
func commitIn(t *testing.T, dir, file, content, subject string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_AUTHOR_DATE=2026-11-21T12:00:00Z", "GIT_COMMITTER_DATE=2026-11-21T12:00:00Z")
	for _, args := range [][]string{{"add", "-A"}, {"commit", "--quiet", "-m", subject}, {"rev-parse", "HEAD"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		if args[0] == "rev-parse" {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}
