//go:build !lite

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kvsweep/kvsweep/bisect"
	"github.com/kvsweep/kvsweep/imagebuild"
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
func buildRevisions(e *env, spec *matrix.Spec, specPath, out, file string, insecure bool) (map[string]render.RevisionImage, []string, func(bool) error, error) {
	r, err := bisect.LoadRevisions(file)
	if err != nil {
		return nil, nil, nil, err
	}
	pins, err := specPins(spec, specPath)
	if err != nil {
		return nil, nil, nil, err
	}
	work, keep, err := revisionsDir(out)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stop := interruptible()
	defer stop()
	sets, err := revisionSets(ctx, r, pins, work)
	if err != nil {
		return nil, nil, nil, err
	}
	b := &revImages{pins: pins, addr: r.BuildkitAddr, mediaTypes: r.MediaTypes, insecure: insecure}
	images := map[string]render.RevisionImage{}
	var names []string
	for _, s := range sets {
		im, err := revisionImage(ctx, e, b, r, s, work)
		if err != nil {
			return nil, nil, nil, err
		}
		images[s.Name] = render.RevisionImage{Image: pullRef(r.PullRegistry, im.Ref), Expect: im.Expect}
		names = append(names, s.Name)
	}
	return images, names, keep, nil
}

// revisionImage is one set's image, built or found.
func revisionImage(ctx context.Context, e *env, b *revImages, r *bisect.Revisions, s bisect.Set, work string) (*probeImage, error) {
	im, skip, err := b.image(ctx, s.Refs, r.Push+":rev-"+s.Name, filepath.Join(work, s.Name), func(event, detail string) {
		switch event {
		case "built":
			fmt.Fprintf(e.stderr, "kvsweep: revision %s: built %s\n", s.Name, detail)
		case "reuse":
			fmt.Fprintf(e.stderr, "kvsweep: revision %s: already pushed: %s\n", s.Name, detail)
		}
	})
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

// specPins reads the spec's container.pins.
func specPins(spec *matrix.Spec, specPath string) (*imagebuild.Pins, error) {
	if spec.Container.Pins == "" {
		return nil, usagef("--revisions: the spec has no container.pins to move revisions away from")
	}
	pinsPath := spec.Container.Pins
	if !filepath.IsAbs(pinsPath) {
		pinsPath = filepath.Join(filepath.Dir(specPath), pinsPath)
	}
	return imagebuild.LoadPins(pinsPath)
}

// revisionSets are the file's sets, each component checked against the
// pins, then a set per commit of its range.
func revisionSets(ctx context.Context, r *bisect.Revisions, pins *imagebuild.Pins, out string) ([]bisect.Set, error) {
	for _, s := range r.Sets {
		for name := range s.Refs {
			if pins.Component(name) == nil {
				return nil, usagef("%s: revision %s: component %q is not in %s", r.Where(s.Pos), s.Name, name, pins.File)
			}
		}
	}
	if r.Range == nil {
		return r.Sets, nil
	}
	c := pins.Component(r.Range.Component)
	if c == nil {
		return nil, usagef("%s: range: component %q is not in %s", r.Where(r.Range.Pos), r.Range.Component, pins.File)
	}
	repo, err := componentRepo(ctx, c, filepath.Join(out, "revisions"))
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
