//go:build !lite

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/bisect"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/imagebuild"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/testrun"
)

// prober probes commits of a bisect: the image at the commit, the cells
// run in it on the spec's scheduler, the run judged.
type prober struct {
	e       *env
	o       *bisectOpts
	spec    string
	pins    *imagebuild.Pins
	filters []history.Filter
	id      string

	goodMu   sync.Mutex
	goodRun  *testrun.Run
	goodDone chan struct{}
}

func newProber(e *env, o *bisectOpts, spec string) (*prober, error) {
	s, _, _, err := matrix.LoadCells(spec)
	if err != nil {
		return nil, err
	}
	if !s.RunsImage() {
		return nil, usagef("%s runs no container image (container.runtime %s): a bisect probes images", spec, s.Container.Runtime)
	}
	pinsPath := o.pins
	if pinsPath == "" && s.Container.Pins != "" {
		pinsPath = s.Container.Pins
		if !filepath.IsAbs(pinsPath) {
			pinsPath = filepath.Join(filepath.Dir(spec), pinsPath)
		}
	}
	if pinsPath == "" {
		return nil, usagef("no pins file: give --pins, or set the spec's container.pins")
	}
	p := &prober{e: e, o: o, spec: spec, goodDone: make(chan struct{})}
	if p.pins, err = imagebuild.LoadPins(pinsPath); err != nil {
		return nil, err
	}
	if p.pins.Component(o.component) == nil {
		return nil, usagef("--component %q is not in %s", o.component, pinsPath)
	}
	if o.cells != "" {
		if p.filters, err = history.ParseFilters(strings.Split(o.cells, ",")); err != nil {
			return nil, usagef("--cells: %v", err)
		}
	}
	if o.metric != "" {
		if _, err := parsePercent(o.threshold); err != nil {
			return nil, usagef("--threshold %q: %v", o.threshold, err)
		}
	}
	return p, os.MkdirAll(o.out, 0o755)
}

// state loads the bisect in --out, or starts one: the component's commits
// from good to bad.
func (p *prober) state(ctx context.Context) (*bisect.State, error) {
	args := p.o.args(p.spec)
	st, err := bisect.Load(p.o.out)
	if err != nil || st != nil {
		// Going on with a bisect needs no repository: its commits are in
		// its state.
		if st != nil {
			p.id = st.ID
			err = st.Check(p.o.out, args)
		}
		return st, err
	}
	repo, err := p.source(ctx)
	if err != nil {
		return nil, err
	}
	commits, err := bisect.Commits(ctx, repo, p.o.good, p.o.bad, p.o.all)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	p.id = "bisect-" + hex.EncodeToString(b)
	st = bisect.New(p.id, args, p.o.parallel, commits)
	fmt.Fprintf(p.e.stderr, "kvsweep bisect: %d commits of %s from %s to %s; %d at a time\n", len(commits), p.o.component, commits[0].Short(), commits[len(commits)-1].Short(), st.K)
	return st, st.Save(p.o.out)
}

// source is the repository the component's commits come from.
func (p *prober) source(ctx context.Context) (string, error) {
	return componentRepo(ctx, p.pins.Component(p.o.component), p.o.out)
}

// componentRepo is the git repository a component's commits are read
// from: its checkout, or a bare mirror of its repository under dir
// (cloned once, fetched after).
func componentRepo(ctx context.Context, c *imagebuild.Source, dir string) (string, error) {
	if c.Path != "" {
		return c.Path, nil
	}
	mirror := filepath.Join(dir, "mirror", c.Name+".git")
	if _, err := os.Stat(mirror); err == nil {
		return mirror, runGit(ctx, "", "-C", mirror, "fetch", "--quiet", "origin", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
	}
	return mirror, runGit(ctx, "", "clone", "--quiet", "--bare", "--end-of-options", c.Repo, mirror)
}

func runGit(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Probe probes commit c (see bisect.Prober).
func (p *prober) Probe(ctx context.Context, c bisect.Commit, role bisect.Role) (bisect.Outcome, error) {
	dir := filepath.Join(p.o.out, bisect.ProbesDir, c.Short())
	e := &env{stdout: prefixed(p.e.stdout, c.Short()), stderr: prefixed(p.e.stderr, c.Short())}
	im, skip, err := p.image(ctx, c, dir)
	if err != nil || skip != "" {
		if role == bisect.GoodEnd {
			p.setGood(nil)
		}
		return bisect.Outcome{Verdict: bisect.Skipped, Reason: skip}, err
	}
	run, err := p.runCells(ctx, e, c, im, filepath.Join(dir, "sweep"))
	if err != nil {
		return bisect.Outcome{}, err
	}
	o := p.judge(ctx, run, role)
	o.Image, o.Sweep, o.RunID = im.Ref, filepath.Join(dir, "sweep"), run.ID
	p.note(e, c, o)
	return o, nil
}

// image is the probe's image (see revImages.image).
func (p *prober) image(ctx context.Context, c bisect.Commit, dir string) (*probeImage, string, error) {
	b := p.builder()
	tag := fmt.Sprintf("%s:bisect-%s-%s", p.o.push, p.o.component, c.Short())
	return b.image(ctx, map[string]string{p.o.component: c.SHA}, tag, dir, func(event, detail string) {
		_ = bisect.Journal(p.o.out, event, c.SHA, detail)
	})
}

func (p *prober) builder() *revImages {
	return &revImages{pins: p.pins, addr: p.o.addr, mediaTypes: p.o.mediaTypes, insecure: p.o.insecure}
}

// lastLine is the last non-empty line of a message: a failed build's
// step and its error.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

var errNoGood = errors.New("the good end's probe gave no run to compare with")
