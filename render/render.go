// Package render turns the cells of a sweep into its sweep directory: the
// manifest and one Slurm job script per job (render.go, plan.go), rendered
// from the templates (script.go). It renders only; package scheduler runs
// what it wrote.
//
// Cells of one topology share a resource shape and go into one job-array
// script; the array index selects the cell from the job's cell table
// (jobs/NAME.cells). Arrays are split at the maximum array size. Each cell's
// harness command line is written NUL-separated to jobs/NAME.args and read by
// the job with mapfile, so no spec value is ever parsed by a shell; the few
// values that appear in the script text (image, mounts, environment values)
// pass through the shq quoting function.
package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
)

// Options control rendering.
type Options struct {
	// SweepID names the sweep; empty keeps the id of an existing sweep
	// directory or makes a new one from the spec name.
	SweepID string
	// TemplatesDir overrides embedded templates (see package templates).
	TemplatesDir string
	// MaxArraySize splits arrays; 0 means sweep.DefaultMaxArraySize.
	MaxArraySize int
	// NoArray renders one script per cell.
	NoArray bool
	// Version is recorded in the manifest.
	Version string
	// Binary is copied to DIR/bin/kvsweep for jobs that run kvsweep (two-node
	// jobs coordinate through it); default: this executable.
	Binary string
	// NoBinary, when set, refuses a sweep whose jobs run kvsweep: this
	// kvsweep cannot do what those jobs ask of it (a -tags lite build).
	NoBinary error
	// Image replaces the spec's container.image (its tag resolved to a
	// digest); empty keeps the spec's.
	Image string
	// Expect adds commits the image must record (resolved from
	// container.pins) to the spec's container.expect.
	Expect map[string]string
	// EngineImages are engines' images as resolved at render (their tags
	// pinned to digests), by engine name.
	EngineImages map[string]string
	// Revisions are the images of revision sets (kvsweep run --revisions),
	// by the value of the cells' revision parameter: the cells of a set
	// run in jobs of their own, in its image, expecting its commits.
	Revisions map[string]RevisionImage
	// Objects renders the Kubernetes Job of a job (scheduler k8s);
	// nil refuses such a spec (a build without the Kubernetes client).
	Objects func(spec *matrix.Spec, m *sweep.Manifest, j sweep.Job) ([]byte, error)
}

// RevisionImage is the image of a revision set and the commits it
// records.
type RevisionImage struct {
	Image  string
	Expect map[string]string
}

// RevisionParam is the cell parameter that names a cell's revision set.
const RevisionParam = "revision"

// Render writes the sweep directory dir for the cells of spec. specSrc is
// frozen into dir/spec.yaml. Rendering into an existing sweep directory
// keeps its id and every cell's job and index, adds new cells as new jobs,
// and refuses to drop cells the directory already has.
func Render(spec *matrix.Spec, specSrc []byte, cells []matrix.Cell, dir string, opts Options) (*sweep.Manifest, error) {
	if opts.MaxArraySize <= 0 {
		opts.MaxArraySize = sweep.DefaultMaxArraySize
	}
	tmpl, err := loadTemplates(opts.TemplatesDir)
	if err != nil {
		return nil, err
	}
	old, err := sweep.ReadManifest(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	m, err := plan(spec, cells, old, opts)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*matrix.Cell, len(cells))
	for i := range cells {
		byID[cells[i].ID] = &cells[i]
	}
	byJob := make(map[string][]*matrix.Cell, len(m.Jobs))
	for _, c := range m.Cells {
		j := m.JobByName(c.Job)
		if byJob[c.Job] == nil {
			byJob[c.Job] = make([]*matrix.Cell, j.Count)
		}
		byJob[c.Job][c.Index] = byID[c.ID]
	}
	if spec.Scheduler == "k8s" {
		if err := onVolume(spec, dir); err != nil {
			return nil, err
		}
		if opts.Objects == nil {
			return nil, fmt.Errorf("scheduler k8s: this kvsweep was built with -tags lite, without the Kubernetes client; build it without the tag")
		}
	}
	c := sweep.Contents{Manifest: m, Spec: specSrc, Scripts: map[string][]byte{}, Cells: map[string][]sweep.CellTableEntry{},
		Objects: map[string][]byte{}}
	for _, j := range m.Jobs {
		script, err := RenderScript(tmpl, spec, m, j)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", j.Script, err)
		}
		c.Scripts[j.Name] = script
		if j.Object != "" {
			if c.Objects[j.Name], err = opts.Objects(spec, m, j); err != nil {
				return nil, fmt.Errorf("render %s: %w", j.Object, err)
			}
		}
		entries := make([]sweep.CellTableEntry, len(byJob[j.Name]))
		for i, mc := range byJob[j.Name] {
			entries[i] = sweep.CellTableEntry{ID: mc.ID, Argv: mc.Argv, Agent: mc.AgentArgv, Service: mc.ServiceArgv}
		}
		c.Cells[j.Name] = entries
	}
	if needsBinary(m) {
		if opts.NoBinary != nil {
			return nil, fmt.Errorf("this sweep's jobs coordinate through kvsweep job (two-node or etcd cells, telemetry): %w", opts.NoBinary)
		}
		if c.Binary = opts.Binary; c.Binary == "" {
			exe, err := os.Executable()
			if err != nil {
				return nil, err
			}
			c.Binary = exe
		}
	}
	if err := sweep.Write(dir, c); err != nil {
		return nil, err
	}
	return m, nil
}

// onVolume refuses a sweep directory the pods of scheduler k8s would not
// find: it must be on the volume they mount, at the same path.
func onVolume(spec *matrix.Spec, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	k := spec.Kubernetes
	if rel, err := filepath.Rel(k.Path, abs); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("%s:%d:%d: kubernetes.volume: the sweep directory %s is not under %s, where the pods mount the volume; render it there (--out %s/NAME)",
			spec.File, k.VolumePos.Line, k.VolumePos.Col, abs, k.Path, k.Path)
	}
	return nil
}

// needsBinary reports whether a job of m runs kvsweep on its nodes: a
// two-node job, telemetry (kvsweep job scrape), or cases with a cache
// state (the harness runs kvsweep job case).
func needsBinary(m *sweep.Manifest) bool {
	if m.Telemetry != nil || (m.Cache != nil && len(m.Cache.Cases) > 0) || m.Profile != nil {
		return true
	}
	for _, j := range m.Jobs {
		if j.Kind == "two-node" || len(m.ServicesOf(j.Name)) > 0 {
			return true
		}
	}
	return false
}
