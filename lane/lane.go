// Package lane is a spec's run end to end, as a library: Prepare pins the
// images, reads the expectations and builds the revision sets' images,
// then renders the sweep; Run submits it, follows it to the end, collects
// it into the history store and removes what killed tasks left; Judge
// compares the run with its baseline and holds it to the gates; WriteCI
// writes what a CI job keeps of it. The commands run, ci and run
// --revisions wire these calls, and Prober runs them for each commit a
// bisect probes.
//
// What needs BuildKit, the registry client or etcd comes in through
// Tools, which the full build of kvsweep fills; without them (a build
// with -tags lite) what needs them is refused with a message, and this
// package links none of them.
package lane

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// ErrLite is what a kvsweep built with -tags lite says of what it lacks.
var ErrLite = errors.New("this kvsweep was built with -tags lite, without BuildKit, the registry client, etcd and PostgreSQL; build it without the tag (go install ./cmd/kvsweep)")

// Tools are the parts of a lane that link heavy trees: the full build
// sets them once; their zero value is the lite build's.
type Tools struct {
	// Images pins, reads pins files and builds images; nil refuses.
	Images Images
	// Objects renders the Kubernetes objects of a job (scheduler k8s);
	// nil: render refuses scheduler k8s.
	Objects func(*matrix.Spec, *sweep.Manifest, sweep.Job) ([]byte, error)
	// NoBinary, when set, refuses sweeps whose jobs run kvsweep job.
	NoBinary error
	// Lock holds the etcd lock of a sweep while it is submitted; nil
	// refuses --lock.
	Lock func(ctx context.Context, url, sweepID string) (release func(), err error)
	// Version is kvsweep's, recorded in what a lane renders.
	Version string
}

// Images is what a lane asks of the image builder.
type Images interface {
	// PinDigest resolves an image's tag to the digest its registry
	// serves; with a platform, to that platform's image of an index.
	PinDigest(ctx context.Context, image, platform string, insecure bool) (string, error)
	// ExpectedCommits resolves a pins file to the commits an image built
	// from it records.
	ExpectedCommits(ctx context.Context, pins string) (map[string]string, error)
	// PinnedCommits are the commits a pins file names exactly, without
	// the network, and the components it does not.
	PinnedCommits(pins string) (map[string]string, []string, error)
	// Pins reads a pins file's components.
	Pins(path string) (*Pins, error)
	// Resolve resolves a pins file with some components moved: a
	// repository's to the ref in refs, a checkout's to the directory in
	// paths.
	Resolve(ctx context.Context, pins string, refs, paths map[string]string, insecure bool) (Resolved, error)
	// Inspect reads an image's digest and the commits it records (nil
	// when it records none).
	Inspect(ctx context.Context, ref string, insecure bool) (digest string, commits map[string]string, err error)
	// Build builds resolved pins as req says (Tag, Addr, MediaTypes,
	// Insecure) and pushes the image.
	Build(ctx context.Context, r Resolved, req ImageRequest) (digest string, commits map[string]string, err error)
}

// Resolved is a pins file resolved to commits, ready to build.
type Resolved interface {
	// Commits is the commit of each component.
	Commits() map[string]string
}

// Pins are the components of a pins file, as a lane needs them.
type Pins struct {
	File       string
	Components []Component
}

// Component is one component of a pins file: a checkout (Path) or a
// repository (Repo).
type Component struct {
	Name, Path, Repo string
}

// Component is the component of that name, nil when there is none.
func (p *Pins) Component(name string) *Component {
	for i := range p.Components {
		if p.Components[i].Name == name {
			return &p.Components[i]
		}
	}
	return nil
}

// ImageRequest asks for the image of the pins file with the components
// of Refs at those revisions (a commit, tag or branch of a repository; a
// revision of a checkout), pushed as Tag and recorded in Dir/image.json.
type ImageRequest struct {
	Pins             string
	Refs             map[string]string
	Tag, Dir         string
	Addr, MediaTypes string
	Insecure         bool
	// Journal hears of each build and reuse.
	Journal func(event, detail string)
}

// Image is what image.json records of an image.
type Image struct {
	Ref    string            `json:"ref"` // REPO:TAG@DIGEST
	Expect map[string]string `json:"expect"`
}

// RenderOptions are how a spec becomes a sweep directory (render's flags).
type RenderOptions struct {
	Out, Templates, SweepID string
	Image, Revisions        string
	Expect                  []string
	MaxArraySize            int
	NoArray, Offline        bool
	Insecure                bool
	// Cells, when set, chooses the cells rendered from the spec's
	// (the operating-point search's probes: the spec with its load and
	// repeat axes set, expanded again).
	Cells func(*matrix.Spec, []matrix.Cell) ([]matrix.Cell, error)
}

// SubmitOptions are how a sweep is submitted and followed (submit's
// flags).
type SubmitOptions struct {
	Sched *scheduler.Config
	Lock  string
	Opts  scheduler.SubmitOptions
	Store string
	// BadNodes keeps nodes with at least this many infra failures in
	// the history store's recent runs out (0: off).
	BadNodes  int
	BadWindow time.Duration
	Quiet     bool
}

// Lane is one spec's run: its options, the tools of this build, and
// where it says what it does.
type Lane struct {
	Stdout, Stderr io.Writer
	Tools          Tools
	Render         RenderOptions
	Submit         SubmitOptions
	// Interval is the time between polls while the sweep runs.
	Interval time.Duration
	// Progress shows the cells' states while the sweep runs (nil:
	// nothing).
	Progress func(quiet bool) func([]scheduler.CellStatus)
	// Ended, when set, hears the cells' states once every cell ended.
	Ended func([]scheduler.CellStatus)
}

// Open opens the sweep in dir with the scheduler the lane's
// configuration picks.
func (l *Lane) Open(dir string) (*sweep.Manifest, scheduler.Scheduler, error) {
	c := *l.Submit.Sched
	c.Log = l.Stderr
	return scheduler.Open(dir, c)
}

// show is the lane's progress display.
func (l *Lane) show() func([]scheduler.CellStatus) {
	if l.Progress == nil {
		return func([]scheduler.CellStatus) {}
	}
	return l.Progress(l.Submit.Quiet)
}

// images is the image builder, or the lite build's refusal of what.
func (l *Lane) images(what string) (Images, error) {
	if l.Tools.Images == nil {
		return nil, errors.Join(errors.New(what), ErrLite)
	}
	return l.Tools.Images, nil
}
