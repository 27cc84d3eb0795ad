package render

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/rules"
	"github.com/kvsweep/kvsweep/sweep"
)

// Plan computes the manifest Render would write, without writing anything.
func Plan(spec *matrix.Spec, cells []matrix.Cell, opts Options) (*sweep.Manifest, error) {
	if opts.MaxArraySize <= 0 {
		opts.MaxArraySize = sweep.DefaultMaxArraySize
	}
	return plan(spec, cells, nil, opts)
}

func plan(spec *matrix.Spec, cells []matrix.Cell, old *sweep.Manifest, opts Options) (*sweep.Manifest, error) {
	m := header(spec, opts)
	placed, err := reuse(m, old, cells)
	if err != nil {
		return nil, err
	}
	if m.SweepID == "" {
		m.SweepID = sweep.NewID(spec.Name)
	}
	if err := sweep.CheckID(m.SweepID); err != nil {
		return nil, err
	}
	p := &packer{m: m, spec: spec, opts: opts, used: map[string]bool{}, open: map[string]int{}}
	for _, j := range m.Jobs {
		p.used[j.Name] = true
	}
	m.Cells = make([]sweep.Cell, 0, len(cells))
	for i := range cells {
		c := &cells[i]
		sc := sweep.Cell{
			ID: c.ID, Name: c.Name, Params: c.Params, Cases: c.Cases,
			Engine: c.Engine, Topology: c.Topology, Geometry: c.Geometry, Kind: c.Kind,
			Dir: sweep.CellsDir + "/" + c.ID, Argv: c.Argv,
		}
		if pl, ok := placed[c.ID]; ok {
			sc.Job, sc.Index = pl.Job, pl.Index
		} else {
			sc.Job, sc.Index = p.place(c)
		}
		m.Cells = append(m.Cells, sc)
	}
	return m, nil
}

// header is the manifest's sweep-wide part: what the spec and the render
// options say of every cell.
func header(spec *matrix.Spec, opts Options) *sweep.Manifest {
	m := &sweep.Manifest{
		SchemaVersion: sweep.SchemaVersion,
		SweepID:       opts.SweepID,
		Name:          spec.Name,
		Scheduler:     spec.Scheduler,
		Spec:          sweep.SpecFile,
		Version:       opts.Version,
	}
	m.Image = cmp.Or(opts.Image, spec.Container.Image)
	m.Runtime = spec.Container.Runtime
	for _, src := range []map[string]string{opts.Expect, spec.Container.Expect} {
		for k, v := range src {
			if m.Expect == nil {
				m.Expect = map[string]string{}
			}
			m.Expect[k] = v
		}
	}
	m.Services = spec.Services
	m.Validity = validity(spec)
	m.RetryInfra = spec.Retry.Infra
	m.QOS, m.Account, m.MaxQueued = spec.Cluster.QOS, spec.Cluster.Account, spec.Cluster.MaxQueued
	m.ResultAdapter = spec.Harness.ResultAdapter
	m.Native = native(spec.Harness.Native)
	if t := spec.Telemetry; t != nil {
		m.Telemetry = &sweep.Telemetry{Endpoints: t.Endpoints, IntervalS: int(t.Interval / time.Second), GPUIntervalMS: int(t.GPUInterval / time.Millisecond)}
	}
	m.Cache = CachePlan(spec)
	m.Profile = ProfilePlan(spec)
	if c := spec.Harness.Client; c != nil {
		m.Client = &sweep.ClientResult{Format: c.Format, File: c.File, CaseBy: c.CaseBy, Values: c.Values}
	}
	return m
}

// reuse keeps what an earlier render of the directory (old, nil for none)
// placed: its sweep id, its jobs, and each cell's job and index, by cell
// id. A spec that lost cells the directory holds is refused.
func reuse(m, old *sweep.Manifest, cells []matrix.Cell) (map[string]sweep.Cell, error) {
	placed := map[string]sweep.Cell{}
	if old == nil {
		return placed, nil
	}
	if m.SweepID != "" && m.SweepID != old.SweepID {
		return nil, fmt.Errorf("the directory holds sweep %s; it cannot be rendered as sweep %s", old.SweepID, m.SweepID)
	}
	m.SweepID = old.SweepID
	have := make(map[string]bool, len(cells))
	for _, c := range cells {
		have[c.ID] = true
	}
	var dropped []string
	for _, c := range old.Cells {
		if !have[c.ID] {
			dropped = append(dropped, c.Name+" ("+c.ID+")")
		}
		placed[c.ID] = c
	}
	if len(dropped) > 0 {
		if len(dropped) > 5 {
			dropped = append(dropped[:5], fmt.Sprintf("and %d more", len(dropped)-5))
		}
		return nil, fmt.Errorf("the spec no longer has %d cell(s) this sweep directory holds: %s; render into a new directory", len(dropped), strings.Join(dropped, ", "))
	}
	m.Jobs = append(m.Jobs, old.Jobs...)
	return placed, nil
}

// packer places new cells into jobs: arrays of one topology (and engine,
// for an engine with a job of its own) up to MaxArraySize, or a job per
// cell where arrays are not used.
type packer struct {
	m    *sweep.Manifest
	spec *matrix.Spec
	opts Options
	used map[string]bool // job names taken
	open map[string]int  // topology (and engine) -> index in m.Jobs of the array being filled
}

// place returns the job and index of a new cell, making a job when none
// has room.
func (p *packer) place(c *matrix.Cell) (job string, index int) {
	// On Kubernetes a two-node cell is a Job of its own: its two pods
	// are the Job's two indexes.
	if p.opts.NoArray || p.spec.Scheduler == "k8s" && c.Kind == "two-node" {
		j := p.newJob(c, false)
		j.Count = 1
		return j.Name, 0
	}
	key := c.Topology
	if p.spec.Engines[c.Engine].OwnJob() {
		key += "\x00" + c.Engine
	}
	if _, ok := p.opts.Revisions[c.Params[RevisionParam]]; ok {
		key += "\x00rev\x00" + c.Params[RevisionParam]
	}
	ji, ok := p.open[key]
	if !ok || p.m.Jobs[ji].Count >= p.opts.MaxArraySize {
		p.newJob(c, true)
		ji = len(p.m.Jobs) - 1
		p.open[key] = ji
	}
	j := &p.m.Jobs[ji]
	j.Count++
	return j.Name, j.Count - 1
}

// newJob adds a job for c's topology (and engine) under a name not taken
// yet: the topology for the first array, TOPOLOGY.N for the next ones,
// TOPOLOGY.CELL for a job of one cell.
func (p *packer) newJob(c *matrix.Cell, array bool) *sweep.Job {
	base := c.Topology
	e := p.spec.Engines[c.Engine]
	if e.OwnJob() {
		base += "-" + c.Engine
	}
	rev, isRev := p.opts.Revisions[c.Params[RevisionParam]]
	if isRev {
		base += "-" + c.Params[RevisionParam]
	}
	name := base
	if !array {
		name = base + "." + c.ID
	}
	for k := 1; p.used[name]; k++ {
		name = base + "." + strconv.Itoa(k)
	}
	p.used[name] = true
	j := sweep.Job{
		Name:     name,
		Script:   sweep.JobsDir + "/" + name + ".sbatch",
		Topology: c.Topology,
		Kind:     c.Kind,
		Res: sweep.Resources{
			Nodes:       c.Resources.Nodes,
			GPUsPerNode: c.Resources.GPUsPerNode,
			CPUsPerTask: c.Resources.CPUsPerTask,
			Mem:         c.Resources.Mem,
			TimeLimit:   matrix.SlurmTime(c.Resources.Time),
			TimeSeconds: int64(c.Resources.Time.Seconds()),
		},
	}
	if e.OwnJob() {
		j.Engine = c.Engine
		if e.Image != "" {
			j.Image = cmp.Or(p.opts.EngineImages[c.Engine], e.Image)
		}
		j.Expect = e.Expect
		j.Services = e.Services
	}
	if isRev {
		j.Image, j.Expect = rev.Image, rev.Expect
	}
	j.Array = array
	if p.spec.Scheduler == "k8s" {
		// The pod runs the script; the Job around it is an object of its own.
		j.Script = sweep.JobsDir + "/" + name + ".sh"
		j.Object = sweep.JobsDir + "/" + name + ".job.yaml"
	}
	j.Table = sweep.JobsDir + "/" + name + ".cells"
	j.Args = sweep.JobsDir + "/" + name + ".args"
	p.m.Jobs = append(p.m.Jobs, j)
	return &p.m.Jobs[len(p.m.Jobs)-1]
}

// validity is the spec's rules and verdict policy as the manifest records
// them; nil when the spec has none.
func validity(spec *matrix.Spec) *sweep.Validity {
	v := &sweep.Validity{}
	texts := func(rs []rules.Rule) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.String()
		}
		return out
	}
	for id, c := range spec.Cases {
		if len(c.Require) > 0 {
			if v.Cases == nil {
				v.Cases = map[string][]string{}
			}
			v.Cases[id] = texts(c.Require)
		}
	}
	for _, name := range spec.TopologyOrder {
		t := spec.Topologies[name]
		if len(t.Require) > 0 {
			if v.Topologies == nil {
				v.Topologies = map[string][]string{}
			}
			v.Topologies[name] = texts(t.Require)
		}
		if t.VerdictsOnly {
			v.VerdictsOnly = append(v.VerdictsOnly, name)
		}
	}
	if v.Cases == nil && v.Topologies == nil && v.VerdictsOnly == nil {
		return nil
	}
	return v
}

// NativeResult is the spec's native-result mapping as the manifest
// records it, and collect reads it.
func NativeResult(n *matrix.NativeResult) *sweep.NativeResult { return native(n) }

// native is the spec's native-result mapping as the manifest records it.
func native(n *matrix.NativeResult) *sweep.NativeResult {
	if n == nil {
		return nil
	}
	out := &sweep.NativeResult{File: n.File, Cases: map[string]sweep.NativeCase{}}
	for id, c := range n.Cases {
		nc := sweep.NativeCase{Verdict: c.Verdict, Message: c.Message}
		for name, m := range c.Metrics {
			if nc.Metrics == nil {
				nc.Metrics = map[string]sweep.NativeMetric{}
			}
			nc.Metrics[name] = sweep.NativeMetric{Pointer: m.Pointer, Unit: m.Unit, Direction: m.Direction, Scale: m.Scale}
		}
		out.Cases[id] = nc
	}
	return out
}
