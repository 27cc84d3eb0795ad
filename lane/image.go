package lane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// image returns the image of the request: the one recorded in
// Dir/image.json, else one already pushed as Tag with the same commits,
// else one built and pushed; either is recorded. A build that fails is no
// error: its reason is returned instead ("does not build: ...").
func (l *Lane) image(ctx context.Context, req ImageRequest) (*Image, string, error) {
	record := filepath.Join(req.Dir, "image.json")
	var im Image
	if data, err := os.ReadFile(record); err == nil && json.Unmarshal(data, &im) == nil && im.Ref != "" {
		return &im, "", nil
	}
	if req.Journal == nil {
		req.Journal = func(string, string) {}
	}
	images := l.Tools.Images
	r, err := l.resolve(ctx, req)
	if err != nil {
		return nil, "", err
	}
	if digest, commits, err := images.Inspect(ctx, req.Tag, req.Insecure); err == nil && commits != nil && sameCommits(commits, r.Commits()) {
		im = Image{Ref: req.Tag + "@" + digest, Expect: commits}
		req.Journal("reuse", im.Ref)
		return &im, "", writeJSON(record, im)
	}
	req.Journal("build", req.Tag)
	start := time.Now()
	digest, commits, err := images.Build(ctx, r, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		req.Journal("build-failed", err.Error())
		return nil, "does not build: " + lastLine(err.Error()), nil
	}
	im = Image{Ref: req.Tag + "@" + digest, Expect: commits}
	req.Journal("built", fmt.Sprintf("%s in %.1fs", im.Ref, time.Since(start).Seconds()))
	return &im, "", writeJSON(record, im)
}

// sameCommits reports whether an image records the resolved commits.
func sameCommits(have, resolved map[string]string) bool {
	for name, commit := range resolved {
		if have[name] != commit {
			return false
		}
	}
	return true
}

// resolve resolves the pins with the components of the request's refs at
// their revisions: a checkout's by a clone of it at the revision (sharing
// its objects, in Dir/src-NAME), a repository's by the ref.
func (l *Lane) resolve(ctx context.Context, req ImageRequest) (Resolved, error) {
	pins, err := l.Tools.Images.Pins(req.Pins)
	if err != nil {
		return nil, err
	}
	refs, paths := map[string]string{}, map[string]string{}
	for _, c := range pins.Components {
		ref, ok := req.Refs[c.Name]
		switch {
		case !ok:
			continue
		case c.Path == "":
			refs[c.Name] = ref
			continue
		}
		src := filepath.Join(req.Dir, "src-"+c.Name)
		if err := os.RemoveAll(src); err != nil {
			return nil, err
		}
		if err := RunGit(ctx, "", "clone", "--quiet", "--shared", "--no-checkout", "--end-of-options", c.Path, src); err != nil {
			return nil, err
		}
		if err := RunGit(ctx, src, "checkout", "--quiet", "--detach", ref, "--"); err != nil {
			return nil, fmt.Errorf("%s at %q: %w", c.Name, ref, err)
		}
		paths[c.Name] = src
	}
	return l.Tools.Images.Resolve(ctx, req.Pins, refs, paths, req.Insecure)
}

// lastLine is the last non-empty line of a message: a failed build's
// step and its error.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// writeJSON writes v to path atomically.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return sweep.WriteFileAtomic(path, b, 0o644)
}
