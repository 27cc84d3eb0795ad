package matrix

import (
	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

func (d *decoder) topologies(n ast.Node, where string, s *Spec) {
	entries := d.Mapping(n, where)
	if len(entries) == 0 && len(d.Errs) == 0 {
		d.Errorf(n, "%s: empty (expected at least one topology)", where)
	}
	for _, e := range entries {
		w := yamlpos.Join(where, e.Key)
		if !nameRE().MatchString(e.Key) {
			d.Errorf(e.KeyN, "%s: invalid topology name %q (expected lower-case letters, digits, '.', '_' or '-')", where, e.Key)
		}
		var workersN, agentN, placementN ast.Node
		t := &Topology{Name: e.Key, Kind: "aggregated", Workers: 2,
			Resources: Resources{Nodes: 1, CPUsPerTask: 1, Time: defaultTime}}
		kindSet := false
		d.Fields(e.Value, w,
			yamlpos.F("kind", func(n ast.Node, w string) { t.Kind = d.oneOf(n, w, TopologyKinds); kindSet = true }),
			yamlpos.F("resources", func(n ast.Node, w string) { d.resources(n, w, &t.Resources) }),
			yamlpos.F("args", func(n ast.Node, w string) { t.Args = d.templates(d.List(n, w), w) }),
			yamlpos.F("agent", func(n ast.Node, w string) { agentN, t.Agent = n, d.templates(d.List(n, w), w) }),
			yamlpos.F("service", func(n ast.Node, w string) { t.Service = d.templates(d.List(n, w), w) }),
			yamlpos.F("require", func(n ast.Node, w string) { t.Require = d.rules(n, w) }),
			yamlpos.F("verdicts_only", func(n ast.Node, w string) { t.VerdictsOnly = d.Bool(n, w) }),
			yamlpos.F("placement", func(n ast.Node, w string) { placementN, t.Placement = n, d.placement(n, w) }),
			yamlpos.F("workers", func(n ast.Node, w string) {
				workersN = n
				if t.Workers = d.Integer(n, w); t.Workers < 1 || t.Workers > MaxGPUsPerNode {
					d.Errorf(n, "%s: %d is out of range (expected an integer from 1 to %d)", w, t.Workers, MaxGPUsPerNode)
				}
			}),
		)
		if !kindSet && yamlpos.IndexOf(TopologyKinds, e.Key) >= 0 {
			t.Kind = e.Key // a topology named after a kind is of that kind
		}
		if t.Kind == "disagg-2p1d" && workersN == nil {
			t.Workers = 3 // two prefill workers and a decode worker
		}
		d.checkKind(e.KeyN, w, t)
		d.checkEffect(w, t, workersN, agentN)
		d.checkPlacement(w, t, placementN)
		s.Topologies[e.Key] = t
		s.TopologyOrder = append(s.TopologyOrder, e.Key)
	}
}

// checkKind enforces what each job template needs from its resources.
func (d *decoder) checkKind(n ast.Node, where string, t *Topology) {
	r := t.Resources
	switch t.Kind {
	case "two-node":
		if r.Nodes != 2 {
			d.Errorf(n, "%s: kind two-node needs resources.nodes: 2, got %d", where, r.Nodes)
		}
		if len(t.Agent) == 0 {
			d.Errorf(n, "%s: kind two-node needs an agent command (the node agent started on the second node)", where)
		}
	case "sidecar":
		if len(t.Service) == 0 {
			d.Errorf(n, "%s: kind sidecar needs a service command (the kvcr_service each worker gets a container of)", where)
		}
	case "disagg-2p1d":
		if r.GPUsPerNode < 2 {
			d.Errorf(n, "%s: kind disagg-2p1d needs at least 2 GPUs (3, or 2 shared with --gpus 0,0,1), got %d", where, r.GPUsPerNode)
		}
	}
	if t.Kind != "two-node" && r.Nodes != 1 {
		d.Errorf(n, "%s: kind %s runs on one node, got resources.nodes: %d", where, t.Kind, r.Nodes)
	}
}

// checkEffect refuses the keys of a topology that would do nothing where
// they are written: an agent on a kind that starts none, workers on a
// kind whose workers are fixed, or with no service to start one per
// worker. workersN and agentN are the keys' values, nil when not given.
func (d *decoder) checkEffect(where string, t *Topology, workersN, agentN ast.Node) {
	if agentN != nil && t.Kind != "two-node" {
		d.Errorf(agentN, "%s: kind %s starts no agent (only two-node does, on its second node); remove agent", yamlpos.Join(where, "agent"), t.Kind)
	}
	switch {
	case workersN == nil:
	case t.Kind == "two-node":
		d.Errorf(workersN, "%s: a two-node topology's workers are those its placement puts on its nodes (one a node without); remove workers", yamlpos.Join(where, "workers"))
	case len(t.Service) == 0:
		d.Errorf(workersN, "%s: workers is how many kvcr_service containers the job starts, one a worker, and %s has no service; remove workers or add service", yamlpos.Join(where, "workers"), where)
	}
}

// placement reads a two-node topology's placement: {head: [0, 1],
// remote: [2], gpus: [0, 0, 0]}.
func (d *decoder) placement(n ast.Node, where string) *Placement {
	p := &Placement{}
	ints := func(n ast.Node, w string) []int {
		var out []int
		for _, item := range d.List(n, w) {
			out = append(out, d.Integer(item, w))
		}
		return out
	}
	d.Fields(n, where,
		yamlpos.F("head", func(n ast.Node, w string) { p.Head = ints(n, w) }),
		yamlpos.F("remote", func(n ast.Node, w string) { p.Remote = ints(n, w) }),
		yamlpos.F("gpus", func(n ast.Node, w string) { p.GPUs = ints(n, w) }),
	)
	workers := len(p.Head) + len(p.Remote)
	seen := make([]bool, workers)
	for _, side := range []struct {
		name string
		idx  []int
	}{{"head", p.Head}, {"remote", p.Remote}} {
		if len(side.idx) == 0 {
			d.Errorf(n, "%s: %s places no worker (each node runs at least one)", where, side.name)
		}
		for _, i := range side.idx {
			switch {
			case i < 0 || i >= workers:
				d.Errorf(n, "%s.%s: worker %d is out of range (expected 0 to %d: the workers are numbered from 0 across both nodes)", where, side.name, i, workers-1)
			case seen[i]:
				d.Errorf(n, "%s.%s: worker %d is placed twice", where, side.name, i)
			default:
				seen[i] = true
			}
		}
	}
	if p.GPUs != nil && len(p.GPUs) != workers {
		d.Errorf(n, "%s.gpus: %d GPUs for %d workers (expected one a worker, in worker order)", where, len(p.GPUs), workers)
	}
	return p
}

// checkPlacement refuses a placement on a kind with one node, and GPUs a
// node does not have.
func (d *decoder) checkPlacement(where string, t *Topology, n ast.Node) {
	switch {
	case n == nil:
	case t.Kind != "two-node":
		d.Errorf(n, "%s: kind %s runs on one node; placement is for kind two-node", yamlpos.Join(where, "placement"), t.Kind)
	default:
		t.Workers = len(t.Placement.Head) + len(t.Placement.Remote)
		for i, g := range t.Placement.GPUs {
			if g < 0 || g >= t.Resources.GPUsPerNode {
				d.Errorf(n, "%s.gpus: worker %d on GPU %d, but resources.gpus_per_node is %d (GPUs are numbered from 0 on each node)", yamlpos.Join(where, "placement"), i, g, t.Resources.GPUsPerNode)
			}
		}
	}
}

func (d *decoder) resources(n ast.Node, where string, r *Resources) {
	inRange := func(n ast.Node, w string, min, max int) int {
		v := d.Integer(n, w)
		if v < min || v > max {
			d.Errorf(n, "%s: %d is out of range (expected an integer from %d to %d)", w, v, min, max)
		}
		return v
	}
	d.Fields(n, where,
		yamlpos.F("nodes", func(n ast.Node, w string) { r.Nodes = inRange(n, w, 1, MaxNodes) }),
		yamlpos.F("gpus_per_node", func(n ast.Node, w string) { r.GPUsPerNode = inRange(n, w, 0, MaxGPUsPerNode) }),
		yamlpos.F("cpus_per_task", func(n ast.Node, w string) { r.CPUsPerTask = inRange(n, w, 1, MaxCPUsPerTask) }),
		yamlpos.F("mem", func(n ast.Node, w string) {
			v, ok := d.Scalar(n, w)
			if ok && !memRE().MatchString(v.S) {
				d.Errorf(n, "%s: bad memory size %q (expected a number with an optional K, M, G or T suffix, like 64G)", w, v.S)
			}
			r.Mem = v.S
		}),
		yamlpos.F("time", func(n ast.Node, w string) {
			v, ok := d.Scalar(n, w)
			if !ok {
				return
			}
			t, err := ParseDuration(v.S)
			if err != nil {
				d.Errorf(n, "%s: bad duration %q (expected a duration like 90m or 1h30m, or Slurm's [D-]HH:MM:SS)", w, v.S)
			}
			r.Time = t
		}),
	)
}
