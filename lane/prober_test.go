package lane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/bisect"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/testrun"
)

// fakeImages stands in for the image builder only: an image's digest is
// its tag's hash, it records no commits, and the commits of broken do not
// build. Resolving is real as far as git goes: a checkout's component is
// at the commit lane cloned it to.
type fakeImages struct {
	repo   string
	broken map[string]bool
	mu     sync.Mutex
	built  []string
}

type fakeResolved map[string]string

func (r fakeResolved) Commits() map[string]string { return r }

func (f *fakeImages) PinDigest(context.Context, string, string, bool) (string, error) {
	return "", errors.New("not pinned in a test")
}

func (f *fakeImages) ExpectedCommits(context.Context, string) (map[string]string, error) {
	return nil, nil
}

func (f *fakeImages) PinnedCommits(string) (map[string]string, []string, error) { return nil, nil, nil }

func (f *fakeImages) Pins(path string) (*Pins, error) {
	return &Pins{File: path, Components: []Component{{Name: "kvcr", Path: f.repo}}}, nil
}

func (f *fakeImages) Resolve(ctx context.Context, _ string, _, paths map[string]string, _ bool) (Resolved, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", paths["kvcr"], "rev-parse", "HEAD").Output()
	if err != nil {
		return nil, err
	}
	return fakeResolved{"kvcr": strings.TrimSpace(string(out))}, nil
}

func (f *fakeImages) Inspect(context.Context, string, bool) (string, map[string]string, error) {
	return "", nil, errors.New("no such image")
}

func (f *fakeImages) Build(_ context.Context, r Resolved, req ImageRequest) (string, map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.built = append(f.built, r.Commits()["kvcr"])
	if f.broken[r.Commits()["kvcr"]] {
		return "", nil, errors.New("building kvcr\nstep 3/7: make: *** [all] Error 2")
	}
	sum := sha256.Sum256([]byte(req.Tag))
	return "sha256:" + hex.EncodeToString(sum[:]), nil, nil
}

// docker stands in for the container runtime: it runs the command on the
// host with the image's reference in $PROBE_IMAGE, so the harness can
// behave as the commit the image was built at would.
const docker = `#!/bin/sh
[ "$1" = run ] || exit 0
shift
ep=
while [ $# -gt 0 ]; do
	case $1 in
	--entrypoint) ep=$2; shift 2 ;;
	--) shift; break ;;
	*) shift ;;
	esac
done
PROBE_IMAGE=$1
export PROBE_IMAGE
shift
exec "$ep" "$@"
`

// harness passes its case unless the image's commit is listed in bad
// (then it fails it), with a ttft_ms metric of 100, or 150 on a slow
// commit.
const harness = `#!/bin/sh
set -eu
img=${PROBE_IMAGE%@*}
short=${img##*-}
verdict=PASS ttft=100
if grep -q "$short" "$(dirname "$0")/bad"; then verdict=FAIL; fi
if grep -q "$short" "$(dirname "$0")/slow"; then ttft=150; fi
tmp=$KVSWEEP_CELL_DIR/result.json.tmp
printf '{"schema_version": 1, "cell_id": "%s", "cases": [{"id": "TC-01", "verdict": "%s", "metrics": {"ttft_ms": {"value": %s, "unit": "ms", "direction": "lower"}}}]}\n' \
	"$KVSWEEP_CELL_ID" "$verdict" "$ttft" >"$tmp"
mv "$tmp" "$KVSWEEP_CELL_DIR/result.json"
`

const probeSpec = `version: 1
name: probe
scheduler: local
container: {runtime: docker, image: r.example.com/x:1, pins: pins.yaml}
harness: {command: [sh, "{{.SpecDir}}/harness.sh"]}
topologies: {aggregated: {resources: {time: 2m}}}
geometries: {g: {}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`

// probeFixture is a kvcr repository of n commits, a spec whose one cell
// runs the harness above under the stand-in docker, and a lane on the
// local executor.
type probeFixture struct {
	dir, spec string
	commits   []string
	images    *fakeImages
	lane      *Lane
	out       bytes.Buffer
}

func newProbeFixture(t *testing.T, n int) *probeFixture {
	t.Helper()
	f := &probeFixture{dir: t.TempDir()}
	repo := filepath.Join(f.dir, "kvcr")
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=A", "-c", "user.email=a@example.com"}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	if err := exec.Command("git", "init", "-q", "-b", "main", repo).Run(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		git("commit", "-q", "--allow-empty", "-m", "change "+string(rune('a'+i)))
		f.commits = append(f.commits, git("rev-parse", "HEAD"))
	}
	write := func(name, content string, mode os.FileMode) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(f.dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/docker", docker, 0o755)
	write("harness.sh", harness, 0o755)
	write("spec.yaml", probeSpec, 0o644)
	write("pins.yaml", "version: 1\n", 0o644)
	write("bad", "\n", 0o644)
	write("slow", "\n", 0o644)
	t.Setenv("PATH", filepath.Join(f.dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	f.spec = filepath.Join(f.dir, "spec.yaml")
	f.images = &fakeImages{repo: repo, broken: map[string]bool{}}
	f.lane = &Lane{Stdout: &f.out, Stderr: &f.out, Tools: Tools{Images: f.images, Version: "test"},
		Submit:   SubmitOptions{Sched: &scheduler.Config{Name: "local", Parallel: 2}, Store: filepath.Join(f.dir, "history.db")},
		Interval: 200 * time.Millisecond}
	return f
}

// mark lists the commits from i on in the harness's file name.
func (f *probeFixture) mark(t *testing.T, name string, from int) {
	t.Helper()
	var b strings.Builder
	for _, c := range f.commits[from:] {
		b.WriteString(c[:12] + "\n")
	}
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *probeFixture) bisect(t *testing.T, o ProbeOptions) *bisect.Answer {
	t.Helper()
	o.Component, o.Good, o.Bad, o.Push = "kvcr", f.commits[0], f.commits[len(f.commits)-1], "r.example.com/x"
	o.Out = filepath.Join(f.dir, "b")
	if o.Threshold == "" {
		o.Threshold = "10%"
	}
	p, err := NewProber(f.lane, o, f.spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, err := p.Bisect(ctx)
	if err != nil {
		t.Fatalf("bisect: %v\n%s", err, f.out.String())
	}
	return a
}

// The cells of each probe run for real on the local executor, in the
// image built (here: named) at the commit; the gates judge them, and the
// answer is the first commit whose cell fails.
func TestProberFindsFirstBadCommit(t *testing.T) {
	f := newProbeFixture(t, 6)
	f.mark(t, "bad", 3)
	a := f.bisect(t, ProbeOptions{Parallel: 1})
	if a.FirstBad == nil || a.FirstBad.SHA != f.commits[3] {
		t.Fatalf("first bad: got %+v, want %s\n%s", a, f.commits[3], f.out.String())
	}
	if a.LastGood.SHA != f.commits[2] {
		t.Errorf("last good: got %s, want %s", a.LastGood.SHA, f.commits[2])
	}
	out := f.out.String()
	for _, want := range []string{"first bad", "(last good)", "local executor finished 1 cells"} {
		if !strings.Contains(out, want) {
			t.Errorf("the bisect's output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "b", "answer.json")); err != nil {
		t.Error(err)
	}
	// Each probe's run is in the history store with the verdict noted.
	st, err := bisect.Load(filepath.Join(f.dir, "b"))
	if err != nil || st == nil {
		t.Fatalf("state: %v", err)
	}
	probe := st.Probes[f.commits[3]]
	run, err := testrun.ReadRun(probe.Sweep)
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != probe.RunID || len(run.Cells) != 1 || len(run.Cells[0].Cases) != 1 || run.Cells[0].Cases[0].Verdict != "FAIL" {
		t.Errorf("the first bad commit's run %s (probe's: %s): %+v", run.ID, probe.RunID, run.Cells)
	}
	if probe.Verdict != bisect.Bad {
		t.Errorf("the first bad commit's probe: %+v", probe)
	}
}

// A commit whose image does not build is skipped, never judged; with
// the first bad commit broken the answer is the range it leaves open.
func TestProberSkipsWhatDoesNotBuild(t *testing.T) {
	f := newProbeFixture(t, 5)
	f.mark(t, "bad", 2)
	f.images.broken[f.commits[2]] = true
	a := f.bisect(t, ProbeOptions{Parallel: 2})
	if a.FirstBad != nil {
		t.Fatalf("first bad: got %s, want the range %s..%s left open\n%s", a.FirstBad.SHA, f.commits[2], f.commits[3], f.out.String())
	}
	if len(a.Range) != 2 || a.Range[0].SHA != f.commits[2] || a.Range[1].SHA != f.commits[3] {
		t.Errorf("range: got %+v", a.Range)
	}
	st, err := bisect.Load(filepath.Join(f.dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if o := st.Probes[f.commits[2]]; o == nil || o.Verdict != bisect.Skipped || !strings.Contains(o.Reason, "does not build: step 3/7") {
		t.Errorf("the broken commit's probe: %+v", o)
	}
}

// With --metric a commit is bad when its mean is worse than the good
// end's past the threshold, though every cell passes.
func TestProberJudgesByMetric(t *testing.T) {
	f := newProbeFixture(t, 4)
	f.mark(t, "slow", 2)
	a := f.bisect(t, ProbeOptions{Parallel: 1, Metric: "ttft_ms", Threshold: "20%"})
	if a.FirstBad == nil || a.FirstBad.SHA != f.commits[2] {
		t.Fatalf("first bad: got %+v, want %s\n%s", a, f.commits[2], f.out.String())
	}
	st, err := bisect.Load(filepath.Join(f.dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if o := st.Probes[f.commits[2]]; o == nil || !strings.Contains(o.Reason, "ttft_ms 150 against 100 on the good commit (+50.0%, threshold 20%)") {
		t.Errorf("the slow commit's probe: %+v", o)
	}
}
