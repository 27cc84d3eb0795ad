package matrix

import (
	"strings"
	"text/template"
)

// CellDirToken is what {{.CellDir}} renders to in harness words; the job
// script replaces it with the cell directory as the job sees it.
const CellDirToken = "@CELL_DIR@"

// HarnessData is what harness words (harness.command, topology args and
// agent) are evaluated against.
type HarnessData struct {
	CellID   string
	Name     string
	Engine   string
	Topology string
	Kind     string
	Geometry string
	Cases    string   // comma-separated, as the harness's --cases expects
	CaseList []string // the same, as a list
	Params   map[string]string
	CellDir  string // CellDirToken
	SpecDir  string // absolute directory of the spec file, at render time
}

func (x *expander) cell(params map[string]string, cases []string) Cell {
	s := x.s
	t := s.Topologies[params[AxisTopology]]
	g := s.Geometries[params[AxisGeometry]]
	c := Cell{
		ID:       CellID(params, cases),
		Params:   params,
		Cases:    cases,
		Engine:   params[AxisEngine],
		Topology: params[AxisTopology],
		Geometry: params[AxisGeometry],
	}
	c.Name = cellName(s, params, cases)
	if t == nil || g == nil {
		return c // already reported by checkAxisValue
	}
	c.Kind = t.Kind
	c.Resources = t.Resources
	data := HarnessData{
		CellID: c.ID, Name: c.Name, Engine: c.Engine, Topology: c.Topology,
		Kind: t.Kind, Geometry: c.Geometry, Cases: strings.Join(cases, ","),
		CaseList: cases, Params: params, CellDir: CellDirToken, SpecDir: x.specDir,
	}
	command, commandAt := s.Harness.Command, "harness.command"
	e := s.Engines[c.Engine]
	if e != nil && e.Harness != nil {
		command, commandAt = e.Harness, "engines."+e.Name+".harness"
	}
	argv := make([]string, 0, len(command)+len(t.Args)+2*len(g.Keys)+2)
	argv = x.words(argv, command, commandAt, &data)
	argv = x.words(argv, t.Args, "topologies."+t.Name+".args", &data)
	if e != nil {
		argv = x.words(argv, e.Args, "engines."+e.Name+".args", &data)
	}
	for _, k := range g.Keys {
		flag := k
		if !strings.HasPrefix(flag, "-") {
			flag = "--" + flag
		}
		argv = append(argv, flag)
		if v := g.Flags[k]; v != "" {
			argv = append(argv, v)
		}
	}
	if t.Kind == "disagg-2p1d" {
		argv = disaggGPUs(argv, t.Resources.GPUsPerNode)
	}
	if s.Harness.CasesFlag != "" {
		argv = append(argv, s.Harness.CasesFlag, data.Cases)
	}
	c.Argv = argv
	c.Workers = t.Workers
	if len(t.Agent) > 0 {
		c.AgentArgv = x.words(nil, t.Agent, "topologies."+t.Name+".agent", &data)
	}
	if len(t.Service) > 0 {
		c.ServiceArgv = x.words(nil, t.Service, "topologies."+t.Name+".service", &data)
	}
	return c
}

// The 2P+1D worker-to-GPU map a disagg-2p1d topology gets when its args
// do not give one (kvsweep plan --help shows it): one GPU each on three or
// more GPUs; on two, both prefill workers share GPU 0 at 0.35 memory
// utilisation, which is also what a replacement prefill worker needs while
// the decode worker keeps the dead one's KV mapped.
const (
	DisaggGPUs         = "0,1,2"
	DisaggSharedGPUs   = "0,0,1"
	DisaggSharedMemory = "0.35"
)

// disaggGPUs adds the default 2P+1D GPU map to argv unless it has one.
func disaggGPUs(argv []string, gpus int) []string {
	has := func(flag string) bool {
		for _, a := range argv {
			if a == flag || strings.HasPrefix(a, flag+"=") {
				return true
			}
		}
		return false
	}
	if has("--gpus") {
		return argv
	}
	if gpus >= 3 {
		return append(argv, "--gpus", DisaggGPUs)
	}
	argv = append(argv, "--gpus", DisaggSharedGPUs)
	if !has("--gpu-memory-utilization") {
		argv = append(argv, "--gpu-memory-utilization", DisaggSharedMemory)
	}
	return argv
}

// words evaluates harness word templates; a word without actions is copied.
func (x *expander) words(argv []string, words []Value, where string, data *HarnessData) []string {
	var b strings.Builder
	for i, w := range words {
		if !strings.Contains(w.S, "{{") {
			x.checkWord(w, where, i, w.S)
			argv = append(argv, w.S)
			continue
		}
		t := x.tmpl[w.Pos]
		if t == nil {
			t = template.Must(template.New("").Option("missingkey=error").Parse(w.S))
			x.tmpl[w.Pos] = t
		}
		b.Reset()
		if err := t.Execute(&b, data); err != nil {
			if !x.failed[w.Pos] {
				x.failed[w.Pos] = true
				x.d.ErrAt(w, "%s[%d]: template %q in cell %s: %s", where, i, w.S, data.Name, templateErr(err))
			}
			continue
		}
		x.checkWord(w, where, i, b.String())
		argv = append(argv, b.String())
	}
	return argv
}
