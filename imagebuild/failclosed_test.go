package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func resolveErr(t *testing.T, path string, o ...Option) error {
	t.Helper()
	p, err := LoadPins(path)
	if err != nil {
		return err
	}
	_, err = Resolve(context.Background(), p, o...)
	return err
}

// Each fail-closed case is refused with a message that says what and where.
func TestFailClosed(t *testing.T) {
	e := setup(t)
	rp := e.repos(t)
	kvcr := checkout(t)
	// A branch of the dynamo repository: it moves.
	branch := exec.Command("git", "branch", "release", rp.dynamo[1])
	branch.Dir = filepath.Join(e.gitBase, "dynamo.git")
	if out, err := branch.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	dirty := checkout(t)
	if err := os.WriteFile(filepath.Join(dirty, "kvcr.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	name, digest, _ := strings.Cut(e.base, "@")
	wrong := "sha256:" + strings.Repeat("ab", 32)
	// Another image under the same tag: the tag has moved off the pinned digest.
	moved := pushVariant(t, strings.TrimSuffix(name, ":1")+":moving", "another image")
	movedName, movedDigest, _ := strings.Cut(moved, "@")
	otherTagSameRepo := movedName + "@" + digest
	placeholderPins := e.pins(t, "<DYNAMO_COMMIT>", rp.adapter[0], kvcr, e.base)
	b, _ := os.ReadFile(placeholderPins)
	col := strings.Index(strings.Split(string(b), "\n")[2], `"<DYNAMO_COMMIT>"`) + 1

	tests := []struct {
		name string
		pins string
		opts []Option
		want string
	}{
		{"placeholder ref", placeholderPins, []Option{WithInsecureRegistry()},
			fmt.Sprintf("pins.yaml:3:%d: dynamo.ref:", col) + ` "<DYNAMO_COMMIT>" is a placeholder, not a revision (pin a tag or a 40-hex commit)`},
		{"branch without --allow-moving", e.pins(t, "release", rp.adapter[0], kvcr, e.base), []Option{WithInsecureRegistry()},
			`pins.yaml:3:9: dynamo: ref "release" is a branch, which moves (now at ` + rp.dynamo[1] + `); pin a tag or a commit, or pass --allow-moving to build and record that commit`},
		{"unknown ref", e.pins(t, "v9", rp.adapter[0], kvcr, e.base), []Option{WithInsecureRegistry()},
			`pins.yaml:3:9: dynamo: ref "v9": no such tag or branch in ` + e.gitURL + `/dynamo.git`},
		{"commit not in the repository", e.pins(t, strings.Repeat("1", 40), rp.adapter[0], kvcr, e.base), []Option{WithInsecureRegistry()},
			`pins.yaml:3:9: dynamo: commit 1111111111111111111111111111111111111111 could not be fetched from`},
		{"base without digest", e.pins(t, "v0", rp.adapter[0], kvcr, name), []Option{WithInsecureRegistry()},
			`pins.yaml:2:7: base: "` + name + `" has no digest (expected NAME:TAG@sha256:..., so the build cannot change under you)`},
		{"base digest not in the registry", e.pins(t, "v0", rp.adapter[0], kvcr, name+"@"+wrong), []Option{WithInsecureRegistry()},
			`pins.yaml:2:7: base: digest ` + wrong + ` of ` + strings.Split(name, ":")[0] + ":" + strings.Split(name, ":")[1] + ` is not in the registry`},
		{"base tag moved off the digest", e.pins(t, "v0", rp.adapter[0], kvcr, otherTagSameRepo), []Option{WithInsecureRegistry()},
			`pins.yaml:2:7: base: tag ` + movedName + ` now points to ` + movedDigest + `, but the pins say ` + digest + `: the tag moved; pin the digest you mean`},
		{"dirty checkout", e.pins(t, "v0", rp.adapter[0], dirty, e.base), []Option{WithInsecureRegistry()},
			`pins.yaml:5:7: kvcr: the checkout ` + dirty + ` has uncommitted changes (diff sha256 `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := resolveErr(t, tc.pins, tc.opts...)
			if err == nil {
				t.Fatal("accepted")
			}
			got := strings.Replace(err.Error(), filepath.Dir(tc.pins)+"/", "", 1)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("error:\n got %s\nwant %s...", got, tc.want)
			}
		})
	}
	// What is refused by default is built when allowed, with a warning, and
	// the commit built is what is recorded.
	r := resolve(t, e.pins(t, "release", rp.adapter[0], dirty, e.base), WithInsecureRegistry(), WithAllowMoving(), WithAllowDirty())
	if r.Revisions[Dynamo].Commit != rp.dynamo[1] || !r.Revisions[KVCR].Dirty || len(r.Warnings) != 2 {
		t.Errorf("allowed: %+v warnings %v", r.Revisions, r.Warnings)
	}
}

// A buildkitd that is not there is a clear error at once, not a hang, and
// is not said to be slow.
func TestBuildkitdUnreachable(t *testing.T) {
	e := setup(t)
	rp := e.repos(t)
	r := resolve(t, e.pins(t, "v0", rp.adapter[0], checkout(t), e.base), WithInsecureRegistry())
	start := time.Now()
	_, err := Build(context.Background(), r, WithAddr("unix://"+filepath.Join(t.TempDir(), "nothing.sock")), WithPush(e.registry+"/test/never:1"))
	if err == nil || !strings.Contains(err.Error(), "could not be reached: is it running?") {
		t.Fatalf("got %v", err)
	}
	// Far past the 10 s connect deadline: only a hang takes this long,
	// however loaded the machine.
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("took %s", d)
	}
}

// A registry that refuses the push (read-only) fails the build with the
// registry's answer.
func TestRegistryRefusesPush(t *testing.T) {
	e := setup(t)
	rp := e.repos(t)
	r := resolve(t, e.pins(t, "v0", rp.adapter[0], checkout(t), e.base), WithInsecureRegistry())
	_, err := Build(context.Background(), r, WithAddr(e.addr), WithPush(e.registryRO+"/test/kvcr:1"), WithInsecureRegistry())
	if err == nil || !strings.Contains(err.Error(), "405") && !strings.Contains(strings.ToLower(err.Error()), "read-only") && !strings.Contains(strings.ToLower(err.Error()), "unsupported") {
		t.Fatalf("push to a read-only registry: %v", err)
	}
	t.Logf("refused: %v", err)
}

// A pins file is hostile input: no value of it reaches git as an option
// or as a transport that runs commands. Each is refused where it stands,
// and the command it carries never runs.
func TestHostilePins(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "executed")
	hostile := []struct{ field, value, want string }{
		{"repo", "--upload-pack=touch " + mark, "is not a repository URL"},
		{"repo", "-u touch " + mark, "is not a repository URL"},
		{"repo", "ext::sh -c touch% " + mark, "is not a repository URL"},
		{"repo", "fd::17", "is not a repository URL"},
		{"repo", "https://example.invalid/x.git\n--upload-pack=x", "is not a repository URL"},
		{"ref", "--upload-pack=touch " + mark, "is not a git ref"},
		{"ref", "-v", "is not a git ref"},
		{"ref", "v1..v2", "is not a git ref"},
	}
	for _, h := range hostile {
		repo, ref := "https://example.invalid/dynamo.git", "v1"
		if h.field == "repo" {
			repo = h.value
		} else {
			ref = h.value
		}
		src := fmt.Sprintf("version: 1\nbase: b:1@sha256:%s\ndynamo: {repo: %q, ref: %q}\nvllm_adapter: {repo: https://example.invalid/a.git, ref: v1}\nkvcr: {path: .}\n",
			strings.Repeat("ab", 32), repo, ref)
		_, err := ParsePins(filepath.Join(dir, "pins.yaml"), []byte(src))
		if err == nil || !strings.Contains(err.Error(), "pins.yaml:3:") || !strings.Contains(err.Error(), h.want) {
			t.Errorf("%s %q: got %v, want a positioned %q", h.field, h.value, err, h.want)
		}
	}
	// Past the parser, git itself is told where its options end: a
	// resolver handed a hostile repository directly still runs nothing.
	if _, err := resolveRemote(context.Background(), "--upload-pack=touch "+mark, "v1"); err == nil {
		t.Error("resolveRemote accepted an option as a repository")
	}
	if _, err := fetchCommitTime(context.Background(), "--upload-pack=touch "+mark, strings.Repeat("a", 40)); err == nil {
		t.Error("fetchCommitTime accepted an option as a repository")
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a command from the pins file ran")
	}
}

// The commit-time cache saves a fetch, never a check: a commit seen in one
// repository is not taken as present in another, or in one that does not
// exist.
func TestCommitCacheKeepsChecks(t *testing.T) {
	e := setup(t)
	rp := e.repos(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	kvcr := checkout(t)
	resolve(t, e.pins(t, rp.dynamo[0], rp.adapter[0], kvcr, e.base), WithInsecureRegistry())
	p := e.pins(t, rp.dynamo[0], rp.adapter[0], kvcr, e.base)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "/dynamo.git", "/nosuch.git", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	err := resolveErr(t, p, WithInsecureRegistry())
	if err == nil || !strings.Contains(err.Error(), "could not be fetched from") {
		t.Fatalf("a cached commit was accepted for a repository that does not exist: %v", err)
	}
	// That is a failure outside the pins file, not a pin refused by policy.
	var re *ResolveError
	if !errors.As(err, &re) {
		t.Errorf("error %T, want *ResolveError", err)
	}
}

// The shipped pins name real public revisions: they parse, and nothing in
// them is a placeholder the build would refuse (image.yml runs them).
func TestExamplePinsAreReal(t *testing.T) {
	path := filepath.Join("..", "examples", "pins.yaml")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePins(path, src)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(string(src), "<>") {
		t.Errorf("%s still holds a <placeholder>", path)
	}
	for _, k := range []string{"ETCD_SHA256", "RUSTUP_SHA256"} {
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(p.BuildArgs[k]) {
			t.Errorf("%s %q is not a SHA-256", k, p.BuildArgs[k])
		}
	}
	// Nothing pinned that the shipped Dockerfile would not use, and
	// nothing it needs missing but the lock, which a site generates.
	r := &Resolved{Pins: p, BuildArgs: p.BuildArgs}
	fs, err := Check(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Rule != RuleLockMissing {
			t.Errorf("%s", f)
		}
	}
	if filepath.Base(p.PythonLock) != "requirements.quick-start.lock" {
		t.Errorf("python_lock %q, want requirements.quick-start.lock (generated from requirements.quick-start.in)", p.PythonLock)
	}
	if !regexp.MustCompile(`@sha256:[0-9a-f]{64}$`).MatchString(p.Base) {
		t.Errorf("base %q is not pinned by digest", p.Base)
	}
}
