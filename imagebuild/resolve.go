package imagebuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
	"github.com/kvsweep/kvsweep/provenance"
)

// Revision is what one component resolved to: what the image records,
// and where and when the commit is.
type Revision struct {
	provenance.Component
	Path       string `json:"-"`
	CommitTime int64  `json:"-"` // unix seconds
}

// Resolved is a pins file with every revision made concrete.
type Resolved struct {
	Pins       *Pins
	Base       provenance.Base
	Revisions  map[string]Revision // by component name
	BuildArgs  map[string]string
	Epoch      int64    // SOURCE_DATE_EPOCH: the newest pinned commit time
	Warnings   []string // what was allowed, not refused
	Dockerfile string
	// Platforms are the platforms the build makes, each from these same
	// pins (WithPlatforms, else the pins' platforms).
	Platforms []string
	// PythonLock is the pins' lock file of Python inputs, by content hash
	// (nil when they name none): its bytes are what the build reads.
	PythonLock *Lock
}

// Lock is a lock file read once: what the build mounts is what is hashed.
type Lock struct {
	File provenance.File
	Data []byte
}

// MaxLockSize bounds a python_lock file.
const MaxLockSize = 4 << 20

// hashLock reads a lock file (a regular file, at most MaxLockSize).
func hashLock(path string) (*Lock, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: lock the Python inputs with hashes (uv pip compile --generate-hashes, or pip-compile --generate-hashes) and commit it beside the pins; see docs/image.md", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxLockSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxLockSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxLockSize)
	}
	sum := sha256.Sum256(data)
	return &Lock{File: provenance.File{Name: filepath.Base(path), SHA256: hex.EncodeToString(sum[:])}, Data: data}, nil
}

// ResolveError is a pins file that could not be resolved for a reason
// outside it (a repository or registry that failed or does not have what
// it names), as opposed to a pin refused by policy (an ErrorList). Each
// message is still positioned.
type ResolveError struct{ List yamlpos.ErrorList }

func (e *ResolveError) Error() string { return e.List.Error() }

// Resolve makes every pin concrete, refusing what could change under the
// build. Errors name the place in the pins file. WithAllowMoving,
// WithAllowDirty, WithOffline and WithInsecureRegistry apply.
func Resolve(ctx context.Context, p *Pins, opts ...Option) (*Resolved, error) {
	o, err := apply(opts)
	if err != nil {
		return nil, err
	}
	r := &Resolved{Pins: p, Revisions: map[string]Revision{}, BuildArgs: p.BuildArgs, Dockerfile: p.Dockerfile}
	if r.Platforms, err = buildPlatforms(p, o.platforms); err != nil {
		return nil, err
	}
	d := yamlpos.NewDecoder(p.File)
	fail := func(s Source, format string, args ...any) {
		d.ErrAt(yamlpos.Value{Pos: s.pos}, "%s: "+format, append([]any{s.Name}, args...)...)
	}
	// The components and the base are independent: resolve them at once.
	type result struct {
		rev Revision
		err error
	}
	results := make([]result, len(p.Components))
	var wg sync.WaitGroup
	for i, s := range p.Components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.Path != "" {
				results[i].rev, results[i].err = resolveCheckout(ctx, s.Path)
			} else {
				results[i].rev, results[i].err = resolveRemote(ctx, s.Repo, s.Ref)
			}
		}()
	}
	var base provenance.Base
	var baseErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		base, baseErr = checkRegistry(ctx, p.Base, r.Platforms, o)
	}()
	wg.Wait()
	failed := baseErr != nil // something outside the pins file went wrong
	for i, s := range p.Components {
		rev, err := results[i].rev, results[i].err
		switch {
		case err != nil:
			fail(s, "%v", err)
			failed = true
			continue
		case rev.Dirty && !o.allowDirty:
			fail(s, "the checkout %s has uncommitted changes (diff sha256 %s); commit them, or pass --allow-dirty to build and record them", s.Path, rev.DiffSHA256[:12])
			continue
		case rev.Dirty:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: building a dirty checkout (diff sha256 %s), as allowed", s.Name, rev.DiffSHA256))
		case rev.Moving && !o.allowMoving:
			fail(s, "ref %q is a branch, which moves (now at %s); pin a tag or a commit, or pass --allow-moving to build and record that commit", s.Ref, rev.Commit)
			continue
		case rev.Moving:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: branch %q resolved to %s, as allowed; that commit is what is built and recorded", s.Name, s.Ref, rev.Commit))
		}
		r.Revisions[s.Name] = rev
		r.Epoch = max(r.Epoch, rev.CommitTime)
	}
	if baseErr != nil {
		d.ErrAt(yamlpos.Value{Pos: p.basePos}, "base: %v", baseErr)
	}
	localFiles(d, p, r)
	r.Base = base
	switch {
	case len(d.Errs) > 0 && failed:
		return nil, &ResolveError{d.Errs}
	case len(d.Errs) > 0:
		return nil, d.Errs
	}
	return r, nil
}

// localFiles checks what the build reads from this machine besides the
// KVCR checkout: a missing Dockerfile or lock fails here, dry run or not,
// not in the middle of a build; the lock is read and hashed once.
func localFiles(d *yamlpos.Decoder, p *Pins, r *Resolved) {
	if p.Dockerfile != "" {
		if fi, err := os.Stat(p.Dockerfile); err != nil {
			d.ErrAt(yamlpos.Value{Pos: p.dfPos}, "dockerfile: %v", err)
		} else if !fi.Mode().IsRegular() {
			d.ErrAt(yamlpos.Value{Pos: p.dfPos}, "dockerfile: %s is not a regular file", p.Dockerfile)
		}
	}
	if p.PythonLock != "" {
		var err error
		if r.PythonLock, err = hashLock(p.PythonLock); err != nil {
			d.ErrAt(yamlpos.Value{Pos: p.lockPos}, "python_lock: %v", err)
		}
	}
}

// git runs git with no prompts and returns its output.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	// No prompts, and only the transports a pin may name: git's ext:: and
	// fd:: run commands.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true",
		"GIT_ALLOW_PROTOCOL="+strings.Join(RepoSchemes, ":"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return out.Bytes(), nil
}

// resolveRemote turns a ref of a repository into a commit: a 40-hex
// commit as is, a tag to the commit it names, a branch to its commit now
// (marked moving). The commit is then fetched (depth 1) for its time,
// which also proves it exists.
func resolveRemote(ctx context.Context, repo, ref string) (Revision, error) {
	rev := Revision{Component: provenance.Component{Repo: repo, Ref: ref}}
	if commitRE().MatchString(ref) {
		rev.Commit = ref
	} else {
		out, err := git(ctx, "", "ls-remote", "--end-of-options", repo)
		if err != nil {
			return rev, err
		}
		refs := map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			sha, refname, ok := strings.Cut(strings.TrimSpace(line), "\t")
			if ok {
				refs[refname] = sha
			}
		}
		switch {
		case refs["refs/tags/"+ref+"^{}"] != "":
			rev.Commit = refs["refs/tags/"+ref+"^{}"] // an annotated tag, peeled
		case refs["refs/tags/"+ref] != "":
			rev.Commit = refs["refs/tags/"+ref]
		case refs["refs/heads/"+ref] != "":
			rev.Commit, rev.Moving = refs["refs/heads/"+ref], true
		case strings.HasPrefix(ref, "refs/") && refs[ref] != "":
			rev.Commit, rev.Moving = refs[ref], strings.HasPrefix(ref, "refs/heads/")
		default:
			return rev, fmt.Errorf("ref %q: no such tag or branch in %s", ref, repo)
		}
	}
	t, err := commitTime(ctx, repo, rev.Commit)
	if err != nil {
		return rev, err
	}
	rev.CommitTime = t
	return rev, nil
}

// commitTime fetches one commit (depth 1) into a scratch repository and
// reads its committer time, which also proves the repository has it. A
// commit's time never changes, so it is kept in the user's cache directory
// by repository and commit id: a hit says this repository was seen to
// have this commit, never more (another repository misses and fetches).
func commitTime(ctx context.Context, repo, commit string) (int64, error) {
	cache := ""
	if dir, err := os.UserCacheDir(); err == nil {
		key := sha256.Sum256([]byte(repo))
		cache = filepath.Join(dir, "kvsweep", "commit-time", hex.EncodeToString(key[:8])+"-"+commit)
		if b, err := os.ReadFile(cache); err == nil {
			if t, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return t, nil
			}
		}
	}
	t, err := fetchCommitTime(ctx, repo, commit)
	if err == nil && cache != "" && os.MkdirAll(filepath.Dir(cache), 0o755) == nil {
		_ = os.WriteFile(cache, []byte(strconv.FormatInt(t, 10)), 0o644)
	}
	return t, err
}

func fetchCommitTime(ctx context.Context, repo, commit string) (int64, error) {
	tmp, err := os.MkdirTemp("", "kvsweep-git-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	if _, err := git(ctx, tmp, "init", "--quiet", "--bare"); err != nil {
		return 0, err
	}
	if _, err := git(ctx, tmp, "fetch", "--quiet", "--depth=1", "--end-of-options", repo, commit); err != nil {
		return 0, fmt.Errorf("commit %s could not be fetched from %s (%v)", commit, repo, err)
	}
	out, err := git(ctx, tmp, "log", "-1", "--format=%ct", "--end-of-options", commit)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

// resolveCheckout reads a local checkout: HEAD, its time, and whether
// anything is uncommitted (with a hash of those changes).
func resolveCheckout(ctx context.Context, path string) (Revision, error) {
	rev := Revision{Path: path}
	out, err := git(ctx, path, "rev-parse", "HEAD")
	if err != nil {
		return rev, fmt.Errorf("%s is not a git checkout with a commit: %v", path, err)
	}
	rev.Commit = strings.TrimSpace(string(out))
	if out, err = git(ctx, path, "log", "-1", "--format=%ct", "HEAD"); err != nil {
		return rev, err
	}
	rev.CommitTime, _ = strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if out, err := git(ctx, path, "config", "--get", "remote.origin.url"); err == nil {
		rev.Repo = strings.TrimSpace(string(out))
	}
	status, err := git(ctx, path, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return rev, err
	}
	if len(bytes.TrimSpace(status)) == 0 {
		return rev, nil
	}
	rev.Dirty = true
	h := sha256.New()
	diff, err := git(ctx, path, "diff", "HEAD", "--binary")
	if err != nil {
		return rev, err
	}
	h.Write(diff)
	untracked, err := git(ctx, path, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return rev, err
	}
	names := strings.Split(strings.TrimRight(string(untracked), "\x00"), "\x00")
	sort.Strings(names)
	for _, n := range names {
		if n == "" {
			continue
		}
		b, err := os.ReadFile(path + "/" + n)
		if err != nil {
			return rev, err
		}
		fmt.Fprintf(h, "\x00untracked %s %d\x00", n, len(b))
		h.Write(b)
	}
	rev.DiffSHA256 = hex.EncodeToString(h.Sum(nil))
	return rev, nil
}

// checkRegistry checks that the pinned digest exists and, when the pin
// has a tag, that the tag still points to it.
func checkRegistry(ctx context.Context, ref string, platforms []string, o *options) (provenance.Base, error) {
	nameTag, digest, _ := strings.Cut(ref, "@")
	b := provenance.Base{Name: nameTag, Digest: digest}
	if o.offline {
		return b, nil
	}
	var opts []name.Option
	if o.insecure {
		opts = append(opts, name.Insecure)
	}
	tagged, err := name.ParseReference(nameTag, opts...)
	if err != nil {
		return b, fmt.Errorf("%q: %v", nameTag, err)
	}
	pinned, err := name.NewDigest(tagged.Context().Name()+"@"+digest, opts...)
	if err != nil {
		return b, err
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	desc, err := remote.Head(pinned, ropts...)
	if err != nil {
		return b, fmt.Errorf("digest %s of %s is not in the registry (%v); pass --offline to skip this check", digest, tagged.Context().Name(), shortErr(err))
	}
	if err := baseHasPlatforms(pinned, desc.MediaType, platforms, ropts); err != nil {
		return b, err
	}
	if t, ok := tagged.(name.Tag); ok && strings.Contains(nameTag, ":"+t.TagStr()) {
		desc, err := remote.Head(t, ropts...)
		if err != nil {
			return b, fmt.Errorf("tag %s: %v", t.TagStr(), shortErr(err))
		}
		if desc.Digest.String() != digest {
			return b, fmt.Errorf("tag %s now points to %s, but the pins say %s: the tag moved; pin the digest you mean", nameTag, desc.Digest, digest)
		}
	}
	return b, nil
}

// shortErr keeps registry errors (which can embed whole responses) short.
func shortErr(err error) string {
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}
