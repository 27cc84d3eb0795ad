package lane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kvsweep/kvsweep/bisect"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/sweep"
)

// buildRevisions builds (or finds, recorded in out/revisions or pushed
// already) the image of each revision set of the revisions file, one
// after the other through one buildkitd (layers shared), and returns them
// by set name with the names in the file's order. Before the sweep is
// rendered the records are kept in a scratch directory; keep moves them
// into the sweep once it is.
func (l *Lane) buildRevisions(ctx context.Context, spec *matrix.Spec, specPath string) (map[string]render.RevisionImage, []string, func(bool) error, error) {
	im, err := l.images("--revisions builds images")
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := bisect.LoadRevisions(l.Render.Revisions)
	if err != nil {
		return nil, nil, nil, err
	}
	if spec.Container.Pins == "" {
		return nil, nil, nil, fail.Usagef("--revisions: the spec has no container.pins to move revisions away from")
	}
	pins, err := im.Pins(specRelative(specPath, spec.Container.Pins))
	if err != nil {
		return nil, nil, nil, err
	}
	work, keep, err := revisionsDir(l.Render.Out)
	if err != nil {
		return nil, nil, nil, err
	}
	sets, err := revisionSets(ctx, r, pins, work)
	if err != nil {
		return nil, nil, nil, err
	}
	images := map[string]render.RevisionImage{}
	var names []string
	for _, s := range sets {
		req := ImageRequest{Pins: pins.File, Refs: s.Refs, Tag: r.Push + ":rev-" + s.Name, Dir: filepath.Join(work, s.Name),
			Addr: r.BuildkitAddr, MediaTypes: r.MediaTypes, Insecure: l.Render.Insecure}
		built, err := l.revisionImage(ctx, req, r, s)
		if err != nil {
			return nil, nil, nil, err
		}
		images[s.Name] = render.RevisionImage{Image: PullRef(r.PullRegistry, built.Ref), Expect: built.Expect}
		names = append(names, s.Name)
	}
	return images, names, keep, nil
}

// revisionImage is one set's image, built or found.
func (l *Lane) revisionImage(ctx context.Context, req ImageRequest, r *bisect.Revisions, s bisect.Set) (*Image, error) {
	req.Journal = func(event, detail string) {
		switch event {
		case "built":
			fmt.Fprintf(l.Stderr, "kvsweep: revision %s: built %s\n", s.Name, detail)
		case "reuse":
			fmt.Fprintf(l.Stderr, "kvsweep: revision %s: already pushed: %s\n", s.Name, detail)
		}
	}
	im, skip, err := l.image(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", s.Name, err)
	}
	if skip != "" {
		return nil, fmt.Errorf("%s: revision %s %s", r.Where(s.Pos), s.Name, skip)
	}
	return im, nil
}

// revisionsDir is where the sets' records are: the sweep's revisions
// directory once it is rendered, else a scratch directory whose records
// keep moves into the sweep (render refuses a directory that holds
// anything but a sweep).
func revisionsDir(out string) (string, func(bool) error, error) {
	dir := filepath.Join(out, "revisions")
	if _, err := os.Stat(filepath.Join(out, sweep.ManifestFile)); err == nil {
		return dir, nil, nil
	}
	tmp, err := os.MkdirTemp("", "kvsweep-revisions-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func(rendered bool) error {
		defer os.RemoveAll(tmp)
		if !rendered {
			return nil
		}
		records, _ := filepath.Glob(filepath.Join(tmp, "*", "image.json"))
		for _, rec := range records {
			b, err := os.ReadFile(rec)
			if err != nil {
				return err
			}
			dst := filepath.Join(dir, filepath.Base(filepath.Dir(rec)), "image.json")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := sweep.WriteFileAtomic(dst, b, 0o644); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// revisionSets are the file's sets, each component checked against the
// pins, then a set per commit of its range.
func revisionSets(ctx context.Context, r *bisect.Revisions, pins *Pins, out string) ([]bisect.Set, error) {
	for _, s := range r.Sets {
		for name := range s.Refs {
			if pins.Component(name) == nil {
				return nil, fail.Usagef("%s: revision %s: component %q is not in %s", r.Where(s.Pos), s.Name, name, pins.File)
			}
		}
	}
	if r.Range == nil {
		return r.Sets, nil
	}
	c := pins.Component(r.Range.Component)
	if c == nil {
		return nil, fail.Usagef("%s: range: component %q is not in %s", r.Where(r.Range.Pos), r.Range.Component, pins.File)
	}
	repo, err := ComponentRepo(ctx, c, filepath.Join(out, "revisions"))
	if err != nil {
		return nil, err
	}
	commits, err := bisect.Commits(ctx, repo, r.Range.From, r.Range.To, r.Range.All)
	if err != nil {
		return nil, fmt.Errorf("%s: range: %w", r.Where(r.Range.Pos), err)
	}
	sets := append([]bisect.Set(nil), r.Sets...)
	for _, cm := range commits {
		sets = append(sets, bisect.Set{Name: cm.Short(), Refs: map[string]string{c.Name: cm.SHA}, Pos: r.Range.Pos})
	}
	return sets, nil
}

// ComponentRepo is the git repository a component's commits are read
// from: its checkout, or a bare mirror of its repository under dir
// (cloned once, fetched after).
func ComponentRepo(ctx context.Context, c *Component, dir string) (string, error) {
	if c.Path != "" {
		return c.Path, nil
	}
	mirror := filepath.Join(dir, "mirror", c.Name+".git")
	if _, err := os.Stat(mirror); err == nil {
		return mirror, RunGit(ctx, "", "-C", mirror, "fetch", "--quiet", "origin", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
	}
	return mirror, RunGit(ctx, "", "clone", "--quiet", "--bare", "--end-of-options", c.Repo, mirror)
}

// RunGit runs git in dir; its error carries git's message.
func RunGit(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// PullRef is ref from registry instead of the one it names (none: as is).
func PullRef(registry, ref string) string {
	if registry == "" {
		return ref
	}
	_, rest, _ := strings.Cut(ref, "/")
	return registry + "/" + rest
}
