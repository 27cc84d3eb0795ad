// Package sbatch turns the cells of a sweep into Slurm job scripts and runs
// them: rendering (this file), submission and tracking.
//
// Cells of one topology share a resource shape and go into one job-array
// script; the array index selects the cell from the job's cell table
// (jobs/NAME.cells). Arrays are split at the maximum array size. Each cell's
// harness command line is written NUL-separated to jobs/NAME.args and read by
// the job with mapfile, so no spec value is ever parsed by a shell; the few
// values that appear in the script text (image, mounts, environment values)
// pass through the shq quoting function.
package sbatch

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/templates"
)

// DefaultMaxArraySize is Slurm's default MaxArraySize (indexes 0..1000).
const DefaultMaxArraySize = 1001

// Options control rendering.
type Options struct {
	// SweepID names the sweep; empty keeps the id of an existing sweep
	// directory or makes a new one from the spec name.
	SweepID string
	// TemplatesDir overrides embedded templates (see package templates).
	TemplatesDir string
	// MaxArraySize splits arrays; 0 means DefaultMaxArraySize.
	MaxArraySize int
	// NoArray renders one script per cell.
	NoArray bool
	// Version is recorded in the manifest.
	Version string
	// Binary is copied to DIR/bin/kvsweep for jobs that run kvsweep (two-node
	// jobs coordinate through it); default: this executable.
	Binary string
}

// Render writes the sweep directory dir for the cells of spec. specSrc is
// frozen into dir/spec.yaml. Rendering into an existing sweep directory
// keeps its id and every cell's job and index, adds new cells as new jobs,
// and refuses to drop cells the directory already has.
func Render(spec *matrix.Spec, specSrc []byte, cells []matrix.Cell, dir string, opts Options) (*sweep.Manifest, error) {
	if opts.MaxArraySize <= 0 {
		opts.MaxArraySize = DefaultMaxArraySize
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
	for _, d := range []string{sweep.JobsDir, sweep.CellsDir, sweep.LogsDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, sweep.SpecFile), specSrc, 0o644); err != nil {
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
	for _, j := range m.Jobs {
		script, err := RenderScript(tmpl, spec, m, j)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", j.Script, err)
		}
		tab, args := cellTable(byJob[j.Name])
		for _, f := range []struct {
			path string
			data []byte
			perm os.FileMode
		}{{j.Script, script, 0o755}, {j.Table, tab, 0o644}, {j.Args, args, 0o644}} {
			if err := os.WriteFile(filepath.Join(dir, f.path), f.data, f.perm); err != nil {
				return nil, err
			}
		}
	}
	if err := copyBinary(dir, m, opts.Binary); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	// The manifest is written last: its presence means the render is whole.
	if err := sweep.WriteFileAtomic(filepath.Join(dir, sweep.ManifestFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return m, nil
}

// Plan computes the manifest Render would write, without writing anything.
func Plan(spec *matrix.Spec, cells []matrix.Cell, opts Options) (*sweep.Manifest, error) {
	if opts.MaxArraySize <= 0 {
		opts.MaxArraySize = DefaultMaxArraySize
	}
	return plan(spec, cells, nil, opts)
}

func plan(spec *matrix.Spec, cells []matrix.Cell, old *sweep.Manifest, opts Options) (*sweep.Manifest, error) {
	m := &sweep.Manifest{
		SchemaVersion: sweep.SchemaVersion,
		SweepID:       opts.SweepID,
		Name:          spec.Name,
		Scheduler:     spec.Scheduler,
		Spec:          sweep.SpecFile,
		Version:       opts.Version,
	}
	placed := map[string]sweep.Cell{}
	if old != nil {
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
	}
	if m.SweepID == "" {
		m.SweepID = NewSweepID(spec.Name)
	}
	if !sweepIDRE.MatchString(m.SweepID) {
		return nil, fmt.Errorf("sweep id %q: expected letters, digits, '.', '_' or '-'", m.SweepID)
	}
	used := map[string]bool{}
	for _, j := range m.Jobs {
		used[j.Name] = true
	}
	newJob := func(c *matrix.Cell, array bool) *sweep.Job {
		name := c.Topology
		if !array {
			name = c.Topology + "." + c.ID
		}
		for k := 1; used[name]; k++ {
			name = c.Topology + "." + strconv.Itoa(k)
		}
		used[name] = true
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
		j.Array = array
		j.Table = sweep.JobsDir + "/" + name + ".cells"
		j.Args = sweep.JobsDir + "/" + name + ".args"
		m.Jobs = append(m.Jobs, j)
		return &m.Jobs[len(m.Jobs)-1]
	}
	open := map[string]int{} // topology -> index in m.Jobs of the array being filled
	m.Cells = make([]sweep.Cell, 0, len(cells))
	for i := range cells {
		c := &cells[i]
		sc := sweep.Cell{
			ID: c.ID, Name: c.Name, Params: c.Params, Cases: c.Cases,
			Engine: c.Engine, Topology: c.Topology, Geometry: c.Geometry, Kind: c.Kind,
			Dir: sweep.CellsDir + "/" + c.ID, Argv: c.Argv,
		}
		if p, ok := placed[c.ID]; ok {
			sc.Job, sc.Index = p.Job, p.Index
			m.Cells = append(m.Cells, sc)
			continue
		}
		if opts.NoArray {
			j := newJob(c, false)
			j.Count = 1
			sc.Job, sc.Index = j.Name, 0
			m.Cells = append(m.Cells, sc)
			continue
		}
		ji, ok := open[c.Topology]
		if !ok || m.Jobs[ji].Count >= opts.MaxArraySize {
			newJob(c, true)
			ji = len(m.Jobs) - 1
			open[c.Topology] = ji
		}
		sc.Job, sc.Index = m.Jobs[ji].Name, m.Jobs[ji].Count
		m.Jobs[ji].Count++
		m.Cells = append(m.Cells, sc)
	}
	return m, nil
}

var sweepIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// NewSweepID makes a fresh id: the spec name and six random hex digits.
func NewSweepID(name string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// BinaryPath is where a sweep directory keeps the kvsweep its jobs run.
const BinaryPath = "bin/kvsweep"

// copyBinary puts kvsweep into the sweep directory when a job needs it,
// so every node of the allocation finds it on the shared file system.
func copyBinary(dir string, m *sweep.Manifest, src string) error {
	need := false
	for _, j := range m.Jobs {
		need = need || j.Kind == "two-node"
	}
	if !need {
		return nil
	}
	if src == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		src = exe
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copying kvsweep for the two-node jobs: %w", err)
	}
	dst := filepath.Join(dir, BinaryPath)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return sweep.WriteFileAtomic(dst, b, 0o755)
}

// cellTable returns a job's cell table and the command-line blob it points
// into. Line i+1 of the table is "ID ARGV AGENT SERVICE" for index i; each
// command line is OFFSET:LENGTH of its NUL-separated words in the blob, or
// "-" when the cell has none.
func cellTable(cells []*matrix.Cell) (tab, args []byte) {
	var t, a bytes.Buffer
	ref := func(argv []string) string {
		if len(argv) == 0 {
			return "-"
		}
		off := a.Len()
		a.Write(nulJoin(argv))
		return strconv.Itoa(off) + ":" + strconv.Itoa(a.Len()-off)
	}
	for _, c := range cells {
		fmt.Fprintf(&t, "%s %s %s %s\n", c.ID, ref(c.Argv), ref(c.AgentArgv), ref(c.ServiceArgv))
	}
	return t.Bytes(), a.Bytes()
}

// nulJoin encodes a command line for bash's NUL-delimited mapfile; nil for none.
func nulJoin(argv []string) []byte {
	if len(argv) == 0 {
		return nil
	}
	var b bytes.Buffer
	for _, a := range argv {
		b.WriteString(a)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// ScriptData is what job.sbatch.tmpl is executed with.
type ScriptData struct {
	SweepID   string
	JobName   string // the Slurm job name: sweep id and job, sanitized
	Comment   string // the Slurm comment: JobTag
	Job       sweep.Job
	Cluster   matrix.Cluster
	Container matrix.Container
	EnvPass   []string
	EnvSet    []EnvVar
	EnvNames  []string // EnvPass and the names of EnvSet, for runtimes that pass names explicitly
	Workers   int
}

// EnvVar is a literal environment value of the spec.
type EnvVar struct{ Name, Value string }

// RenderScript executes the job template for one job.
func RenderScript(t *template.Template, spec *matrix.Spec, m *sweep.Manifest, j sweep.Job) ([]byte, error) {
	d := ScriptData{
		SweepID:   m.SweepID,
		JobName:   JobName(m.SweepID, j.Name),
		Comment:   JobTag(m.SweepID, j.Name),
		Job:       j,
		Cluster:   spec.Cluster,
		Container: spec.Container,
		EnvPass:   spec.Env.Pass,
		Workers:   2,
	}
	d.EnvNames = append(d.EnvNames, spec.Env.Pass...)
	for _, k := range spec.Env.SetKeys {
		d.EnvSet = append(d.EnvSet, EnvVar{k, spec.Env.Set[k]})
		d.EnvNames = append(d.EnvNames, k)
	}
	if t := spec.Topologies[j.Topology]; t != nil {
		d.Workers = t.Workers
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, templates.JobTemplate, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// JobName is the Slurm job name of a sweep's job.
func JobName(sweepID, job string) string {
	return matrix.SanitizeName("kvs." + sweepID + "." + job)
}

// JobTag is the Slurm comment every job of a sweep carries, so Slurm itself
// can tell which parts of which sweep are submitted.
func JobTag(sweepID, job string) string {
	return "kvsweep:" + sweepID + ":" + job
}

func loadTemplates(dir string) (*template.Template, error) {
	var t *template.Template
	funcs := template.FuncMap{
		"shq":    Quote,
		"sbatch": sbatchValue,
		"sub":    func(a, b int) int { return a - b },
		// include executes a named template chosen at run time (text/template's
		// own {{template}} takes constant names only).
		"include": func(name string, data any) (string, error) {
			if t.Lookup(name) == nil {
				return "", fmt.Errorf("no template %q", name)
			}
			var b bytes.Buffer
			err := t.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
	}
	t, err := templates.Load(dir, funcs)
	return t, err
}

var safeWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// Quote returns s as one bash word that reads back byte for byte: s itself
// when it has no special characters; single-quoted when it has no '$',
// backquote or control character; otherwise ANSI-C quoted ($'...'), where
// only backslash escapes are interpreted, so a line break shows as \n.
func Quote(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	if !strings.ContainsAny(s, "$`") && !hasControl(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// sbatchValue checks a value for an #SBATCH line, which sbatch splits on
// white space unless it is double-quoted.
func sbatchValue(s string) (string, error) {
	if strings.ContainsAny(s, "\"\r\n") {
		return "", fmt.Errorf("value %q cannot be written to an #SBATCH line (contains a quote or line break)", s)
	}
	if strings.ContainsAny(s, " \t") {
		return `"` + s + `"`, nil
	}
	return s, nil
}
