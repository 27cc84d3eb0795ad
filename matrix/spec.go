// Package matrix reads a sweep spec (YAML) and expands it into cells.
//
// A spec names the engines, topologies, hybrid geometry presets and test
// cases to combine, the resources each topology needs, the container the
// harness runs in and the harness command line. Expansion follows the
// GitHub Actions matrix rules: the product of the axes, minus every
// combination that an exclude entry matches partially, plus include entries
// that either extend matching combinations or add complete new ones.
//
// Every error names the file, line and column, the offending value and what
// was expected, for example:
//
//	sweep.yaml:12:5: matrix.engine: unknown value "tgi" (expected one of: vllm, sglang)
//
// The format is documented key by key in docs/spec.md.
package matrix

import (
	"time"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
	"github.com/kvsweep/kvsweep/rules"
)

// Engines are the engines a spec without an engines section may name.
var Engines = []string{"vllm", "sglang"}

// TopologyKinds selects the job template of a topology.
var TopologyKinds = []string{"aggregated", "sidecar", "disagg-2p1d", "two-node"}

// Runtimes are the container runtimes a job can run the harness in.
var Runtimes = []string{"pyxis", "enroot", "apptainer", "docker", "none"}

// Schedulers that can run a sweep.
var Schedulers = []string{"slurm", "local", "k8s"}

// Case grouping modes: all cases of a cell in one job, or one job per case.
const (
	GroupTogether = "together"
	GroupSeparate = "separate"
)

// Axis names with a meaning of their own; any other axis is a free parameter
// handed to the harness templates as .Params.NAME.
const (
	AxisEngine   = "engine"
	AxisTopology = "topology"
	AxisGeometry = "geometry"
	AxisCase     = "case"
)

// Spec is a decoded, validated sweep spec.
type Spec struct {
	File string // path the spec was read from, for messages
	// LeftOut is set by Expand: the combinations it left out because an
	// engine does not support them, in the order first met.
	LeftOut []LeftOut
	// Warnings is set by Expand: what in the spec is likely wrong but
	// not refused (a harness word that is a relative path to a file
	// beside the spec), each at its place.
	Warnings  []*Error
	Version   int
	Name      string
	Scheduler string
	Cluster   Cluster
	// Kubernetes holds the settings of scheduler k8s.
	Kubernetes *Kubernetes
	Container  Container
	Env        Env
	Harness    Harness
	// Topologies and Geometries keep file order in *Order for display;
	// nothing that affects identity depends on that order.
	Topologies    map[string]*Topology
	TopologyOrder []string
	Geometries    map[string]*Geometry
	GeometryOrder []string
	Matrix        Matrix
	CaseGrouping  string
	// Cases holds per-case settings by case id: the rules a PASS must
	// meet to count.
	Cases map[string]*Case
	Retry Retry
	// Telemetry is the engines' endpoints the jobs scrape while a cell
	// runs (nil: none).
	Telemetry *Telemetry
	// Cache is the spec's cache section (nil: none; each case's state is
	// in Cases).
	Cache *CacheSpec
	// Search is the operating-point search's section (nil: none; see
	// decode_search.go).
	Search *Search
	// Profile is the spec's profile section (nil: nothing is profiled).
	Profile *Profile
	// Engines are the spec's engines section: the engine axis takes its
	// values from there. Without one, the axis takes Engines, with no
	// settings of their own.
	Engines     map[string]*Engine
	EngineOrder []string
	// Services are what the job starts for the workers before the
	// harness (Services: etcd, nats), the cell's own; an engine may say
	// otherwise.
	Services []string
}

// The services a job can start for Dynamo's workers: etcd (discovery and
// the key-value store) and NATS (Dynamo's messaging and KV events).
const (
	ServiceEtcd = "etcd"
	ServiceNATS = "nats"
)

// Services lists the service names `services:` accepts.
var Services = []string{ServiceEtcd, ServiceNATS}

// Telemetry says what the jobs scrape: Prometheus endpoints, every
// Interval; a harness may list more in the cell's telemetry-endpoints.
type Telemetry struct {
	Endpoints []string
	Interval  time.Duration
	// GPUInterval is how often the job samples the GPUs with nvidia-smi
	// (telemetry.gpu); 0: not at all.
	GPUInterval time.Duration
}

// DefaultTelemetryEndpoint is where vLLM's server (and Dynamo's frontend)
// serve their metrics by default; DefaultTelemetryInterval the period.
const (
	DefaultTelemetryEndpoint = "http://127.0.0.1:8000/metrics"
	DefaultTelemetryInterval = 10 * time.Second
)

// Engine is what differs per engine: the harness command (a probe without
// KVCR runs another), extra harness words, environment, and an image.
type Engine struct {
	Name string
	// Harness replaces harness.command for this engine's cells.
	Harness []Value
	// Args are harness words appended after the topology's.
	Args []Value
	Env  Env
	// Image replaces container.image for this engine's cells (an SGLang
	// image beside the vLLM one).
	Image string
	// Expect replaces container.expect for this engine's image.
	Expect     map[string]string
	ExpectKeys []string
	// Unsupported are the cases and topology kinds the engine cannot run
	// (SGLang through HiCache: no Guard cases, no disaggregation): the
	// grid's combinations that ask for them are left out, and counted in
	// Spec.LeftOut.
	Unsupported Unsupported
	// Services replaces the spec's services for this engine's cells when
	// not nil (a bare-engine probe needs none).
	Services *[]string
}

// Unsupported is what an engine declares it cannot run.
type Unsupported struct {
	Cases []Value // case ids
	Kinds []Value // topology kinds
}

// LeftOut is what Expand left out of the grid because an engine does not
// support it: the engine, what it does not support ("case TC-04", "kind
// disagg-2p1d") and how many combinations of the axes asked for it.
type LeftOut struct {
	Engine, What string
	Combinations int
}

// OwnJob reports whether the engine's cells need jobs of their own: an
// image or environment of its own is a property of the job script.
func (e *Engine) OwnJob() bool {
	return e != nil && (e.Image != "" || len(e.Env.Pass) > 0 || len(e.Env.Set) > 0 || e.Expect != nil || e.Services != nil)
}

// Case is the settings of one test case.
type Case struct {
	ID      string
	Require []rules.Rule
	// Cache is the declared cache state ("" is warm with no floor: see
	// CacheState), Prime the priming step of a primed case, MinReuse the
	// reuse a warm or primed case's window must show (0: no floor).
	Cache    string
	Prime    []string
	MinReuse float64
	Pos      Pos // of its key
}

// Retry is the spec's retry policy while a sweep is followed.
type Retry struct {
	// Infra is how many times a cell that ended for a reason outside the
	// test (node failure, preemption, a job that never started its
	// harness) is submitted again, avoiding the node it failed on.
	Infra int
}

// MaxInfraRetries bounds retry.infra.
const MaxInfraRetries = 5

// Cluster holds the Slurm settings shared by every job of the sweep.
type Cluster struct {
	Partition   string
	Account     string
	QOS         string
	Reservation string
	Constraint  string
	// MaxQueued bounds the tasks of the user queued at once, for a site
	// whose submit limits the user cannot read (0: read them).
	MaxQueued int
	// Extra are additional sbatch options ("--exclusive"), one #SBATCH line each.
	Extra []string
	// Platform is the platform of the partition's nodes (one of
	// Platforms; "" leaves the image as the spec names it): the image is
	// pinned to that platform's manifest, and each job checks its node.
	Platform string
	// Emulate lets a job run the image on a node of another platform
	// when the node's kernel emulates it (QEMU with binfmt_misc): a
	// functional check, never a figure.
	Emulate bool
}

// Platforms are the values of cluster.platform.
var Platforms = []string{"linux/amd64", "linux/arm64"}

// RunsImage reports whether the jobs run container.image: under a
// container runtime, or as the pods of scheduler k8s.
func (s *Spec) RunsImage() bool {
	return s.Container.Runtime != "none" || s.Scheduler == "k8s"
}

// Kubernetes holds the settings of a sweep run on Kubernetes (scheduler:
// k8s): where its Jobs go, how the pods reach the sweep directory, and
// what the spec adds to every pod.
type Kubernetes struct {
	Namespace string
	// The sweep directory lives on a volume every pod mounts at Path, the
	// path kvsweep sees it at too: a PersistentVolumeClaim (Claim) or a
	// directory of every node (HostPath; Path defaults to it).
	Claim    string
	HostPath string
	Path     string
	// NodeSelector and Tolerations go into every pod.
	NodeSelector map[string]string
	Tolerations  []Toleration
	// Secrets are environment variables taken from Kubernetes secrets by
	// name (secretKeyRef): the values are never written anywhere.
	Secrets []SecretEnv
	// ServiceAccount runs the pods; RuntimeClass picks their runtime
	// (the NVIDIA runtime, where the cluster has one).
	ServiceAccount string
	RuntimeClass   string
	// Overlays are patch files (relative to the spec) applied to every
	// rendered Job: strategic-merge patches (YAML or JSON objects) or RFC
	// 6902 JSON patches (a list of operations).
	Overlays  []string
	Pos       Pos // of the kubernetes section
	VolumePos Pos // of its volume
}

// Toleration is a pod toleration.
type Toleration struct {
	Key, Operator, Value, Effect string
}

// SecretEnv is an environment variable taken from key Key of secret
// Secret.
type SecretEnv struct {
	Name, Secret, Key string
}

// Container says where the harness runs.
type Container struct {
	Runtime string
	Image   string
	Mounts  []string
	Workdir string
	// Expect is the commit each named component of the image must record
	// in its source-revisions.json; a job whose image records another
	// starts no harness and ends PROVENANCE_MISMATCH.
	Expect     map[string]string
	ExpectKeys []string // Expect's keys, sorted
	// Pins is a pins file (relative to the spec) whose resolved commits the
	// image must record, like Expect; resolved when the sweep is rendered.
	Pins string
	// Userns runs apptainer in a user namespace (--userns), as sites
	// without setuid apptainer do.
	Userns bool
	// Staging is where pyxis, enroot and apptainer jobs find the image
	// imported once for every sweep that shares the directory
	// (DIGEST.sqsh, DIGEST.sif): a path, absolute or relative to the
	// sweep directory; "" is the default, kvsweep-images beside the sweep
	// directory; StagingNone imports it in every job, as without staging.
	Staging string
	// User is who the harness runs as: UserSubmitter (""), UserRoot,
	// UserImage, or UID[:GID] (docker and Kubernetes only).
	User string
}

// The values of container.user other than UID[:GID].
const (
	UserSubmitter = "submitter"
	UserRoot      = "root"
	UserImage     = "image"
)

// StagingNone turns staging off (container.staging: none).
const StagingNone = "none"

// StagedRuntimes are the runtimes that import the image into a file, and
// so stage it.
var StagedRuntimes = []string{"pyxis", "enroot", "apptainer"}

// Env is the environment of the harness. Pass lists variable names whose
// values come from the submitting environment at run time and are never
// written anywhere; Set holds literal, non-secret values.
type Env struct {
	Pass    []string
	Set     map[string]string
	SetKeys []string // sorted
}

// Harness is the command the job runs. Each word is a text/template
// evaluated against the cell (see HarnessData).
type Harness struct {
	Command   []Value
	CasesFlag string
	// ResultAdapter is a command run after the harness, in the same
	// container, with the cell directory as its last argument: it writes
	// result.json v1 from what the harness wrote (its log, its own JSON).
	ResultAdapter []string
	// Native maps a harness's own JSON file to result.json v1, for a
	// harness that writes no v1 and needs no adapter.
	Native *NativeResult
	// Client reads a standard benchmark client's output file (harness.result).
	Client *ClientResult
}

// ClientResult is the output file of a standard benchmark client the
// cells run (vLLM's bench serve, SGLang's bench_serving, AIPerf,
// inference-perf) and how its runs map to the cell's cases; read by
// package harness at collect.
type ClientResult struct {
	Format string // one of ClientFormats
	File   string // relative to the cell directory
	CaseBy string // line, tag, request_rate or max_concurrency
	// Values: case id -> the request rate or concurrency of its run.
	Values map[string]string
}

// ClientFormats and ClientCaseBys are what package harness reads (a test
// holds the lists equal).
var (
	ClientFormats = []string{"vllm-bench", "sglang-bench", "aiperf", "inference-perf", "inference-perf-prometheus"}
	ClientCaseBys = []string{"line", "tag", "request_rate", "max_concurrency"}
)

// NativeResult says where in a harness's own JSON each case's verdict
// and metrics are.
type NativeResult struct {
	// File is the harness's JSON, relative to the cell directory.
	File string
	// Cases maps a case id, or "*" for every case, to where its verdict
	// and metrics are; "{case}" in a pointer is the case id.
	Cases map[string]NativeCase
}

// NativeCase is where one case's results are: JSON pointers (RFC 6901).
type NativeCase struct {
	Verdict string
	Message string
	Metrics map[string]NativeMetric
}

// NativeMetric is a metric's pointer, its unit and direction, and a
// factor its value is multiplied by (1 when unset).
type NativeMetric struct {
	Pointer   string
	Unit      string
	Direction string
	Scale     float64
}

// Topology is a named deployment layout with its resources.
type Topology struct {
	Name      string
	Kind      string
	Resources Resources
	// Args are harness words (templates) appended after the command.
	Args []Value
	// Agent is the command started on the second node of a two-node job
	// (the node agent that spawns the remote worker).
	Agent []Value
	// Service is the kvcr_service command a sidecar job starts once per
	// worker, each in its own container; Workers is how many (default 2).
	Service []Value
	Workers int
	// Placement puts a two-node topology's workers on its nodes (nil:
	// worker 0 on the head, worker 1 on the second node).
	Placement *Placement
	// Require are validity rules for every case of the topology's cells.
	Require []rules.Rule
	// VerdictsOnly: the topology's metrics are collected but never
	// compared or gated (a lane that shares GPUs gives functional verdicts
	// only).
	VerdictsOnly bool
}

// Placement is which worker runs on which node of a two-node topology,
// by worker index, and the GPU each uses on its node.
type Placement struct {
	Head, Remote []int
	// GPUs is each worker's GPU on its node, by worker index (nil: the
	// harness's default); rendered into the harness's --gpus.
	GPUs []int
}

// WorkersOn is the placement's workers on a node ("head", "remote"),
// the default placement's for nil.
func (p *Placement) WorkersOn(node string) []int {
	switch {
	case p == nil && node == "head":
		return []int{0}
	case p == nil:
		return []int{1}
	case node == "head":
		return p.Head
	}
	return p.Remote
}

// Resources a job of this topology requests.
type Resources struct {
	Nodes       int
	GPUsPerNode int
	CPUsPerTask int
	Mem         string
	Time        time.Duration
}

// Geometry is a named bundle of harness flags pinned to a measured model
// geometry. Flags are rendered as "--KEY VALUE" in key order.
type Geometry struct {
	Name  string
	Flags map[string]string
	Keys  []string // sorted
}

// Matrix is the grid: axes in file order, plus exclude and include entries.
type Matrix struct {
	Pos     Pos // of the matrix key
	Axes    []Axis
	Exclude []Entry
	Include []Entry
}

// Axis is one dimension of the grid.
type Axis struct {
	Name   string
	Values []Value
	Pos    Pos
}

// Value is a scalar from the spec with the place it was written.
type Value = yamlpos.Value

// Entry is one exclude or include object.
type Entry struct {
	Keys   []string // file order
	Values map[string]Value
	KeyPos map[string]Pos
	Pos    Pos
}

// Pos is a place in the spec file.
type Pos = yamlpos.Pos

// Error is a problem at one place in a spec; ErrorList is all of them.
type (
	Error     = yamlpos.Error
	ErrorList = yamlpos.ErrorList
)
