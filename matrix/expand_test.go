package matrix

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func mustExpand(t *testing.T, src string) []Cell {
	t.Helper()
	s, err := Parse("sweep.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

func names(cells []Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.Name + ":" + strings.Join(c.Cases, ",")
	}
	return out
}

func TestPhase1Grid(t *testing.T) {
	src, err := os.ReadFile("../examples/phase1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells := mustExpand(t, string(src))
	want := []string{
		"vllm-aggregated-qwen3.5-4b:TC-01,TC-02,TC-03,TC-04,TC-05,TC-06",
		"vllm-sidecar-qwen3.5-4b:TC-01,TC-02,TC-03,TC-04,TC-05,TC-06",
		"vllm-disagg-2p1d-qwen3.5-4b:TC-01,TC-02,TC-03,TC-04,TC-05,TC-06",
		"vllm-disagg-2p1d-shared-qwen3.5-4b:TC-01,TC-02,TC-03,TC-04,TC-05,TC-06",
		"vllm-disagg-2p1d-sidecar-qwen3.5-4b:TC-01,TC-02,TC-03,TC-04,TC-05,TC-06",
		"vllm-two-node-qwen3.5-4b:TC-01,TC-02,TC-03,TC-04,TC-05,TC-06",
		"sglang-aggregated-qwen3.5-4b:TC-01,TC-02,TC-03,TC-05",
		"sglang-sidecar-qwen3.5-4b:TC-01,TC-02,TC-03,TC-05",
		"sglang-two-node-qwen3.5-4b:TC-01,TC-02,TC-03,TC-05",
		// The bare-vLLM probe, added by include entries.
		"vllm-bare-aggregated-qwen3.5-4b:TC-01,TC-02",
	}
	if got := names(cells); !reflect.DeepEqual(got, want) {
		t.Errorf("cells:\n got %q\nwant %q", got, want)
	}
	// The shared-GPU 2P+1D layout carries its GPU map; the 3-GPU one gets
	// one GPU per worker.
	for _, c := range cells {
		argv := strings.Join(c.Argv, " ")
		switch c.Topology {
		case "disagg-2p1d-shared":
			if !strings.Contains(argv, "--gpus 0,0,1 --gpu-memory-utilization 0.35") {
				t.Errorf("%s: argv %q lacks the shared GPU map", c.Name, argv)
			}
		case "disagg-2p1d":
			if !strings.Contains(argv, "--gpus 0,1,2") {
				t.Errorf("%s: argv %q lacks the 3-GPU map", c.Name, argv)
			}
		}
	}
	want0 := []string{"python3", "-m", "tests.e2e.phase1", "--engine", "vllm", "--results-dir", "@CELL_DIR@",
		"--hybrid-attention-layers", "8", "--hybrid-linear-layers", "24", "--kv-block-size", "16",
		"--max-model-len", "32768", "--model", "Qwen/Qwen3.5-4B", "--cases", "TC-01,TC-02,TC-03,TC-04,TC-05,TC-06"}
	if !reflect.DeepEqual(cells[0].Argv, want0) {
		t.Errorf("argv:\n got %q\nwant %q", cells[0].Argv, want0)
	}
}

// GitHub Actions semantics: an include adds keys to the combinations it
// does not contradict; one that fits none is a new combination, which may
// bring back an excluded one.
func TestIncludeExclude(t *testing.T) {
	src := edit(t, "case: [TC-01, TC-02]", `case: [TC-01, TC-02]
  exclude:
    - {engine: sglang, case: TC-02}
  include:
    - {engine: vllm, arm: stream}
    - {engine: sglang, topology: aggregated, geometry: g4b, case: TC-02, note: back}`)
	cells := mustExpand(t, strings.Replace(src, "name: mini", "name: mini\ncase_grouping: separate", 1))
	want := []string{
		"vllm-aggregated-g4b-tc-01-arm-stream:TC-01",
		"vllm-aggregated-g4b-tc-02-arm-stream:TC-02",
		"sglang-aggregated-g4b-tc-01:TC-01",
		"sglang-aggregated-g4b-tc-02-note-back:TC-02",
	}
	if got := names(cells); !reflect.DeepEqual(got, want) {
		t.Errorf("cells:\n got %q\nwant %q", got, want)
	}
	if cells[0].Params["arm"] != "stream" {
		t.Errorf("include did not add arm: %v", cells[0].Params)
	}
}

// Reordering keys, axes and axis values does not change cell ids.
func TestIDsIgnoreOrder(t *testing.T) {
	a := mustExpand(t, edit(t, "version: 1", "version: 1"))
	reordered := `matrix:
  case: [TC-02, TC-01]
  geometry: [g4b]
  engine: [sglang, vllm]
  topology: [aggregated]
geometries:
  g4b:
    flags: {model: m}
topologies:
  aggregated:
    resources: {time: 30m, gpus_per_node: 2}
harness:
  command: [harness, --engine, "{{.Engine}}"]
name: mini
version: 1
`
	b := mustExpand(t, reordered)
	ids := func(cs []Cell) map[string]string {
		m := map[string]string{}
		for _, c := range cs {
			m[c.Name] = c.ID
		}
		return m
	}
	if !reflect.DeepEqual(ids(a), ids(b)) {
		t.Errorf("ids changed with order:\n%v\n%v", ids(a), ids(b))
	}
	if a[0].ID == a[1].ID || len(a[0].ID) != 12 {
		t.Errorf("ids not distinct 12-hex: %q %q", a[0].ID, a[1].ID)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	cells := mustExpand(t, edit(t, `  aggregated:
    resources: {gpus_per_node: 2, time: 30m}`, `  aggregated:
    resources: &res {gpus_per_node: 2, time: 30m, mem: 8G}
  sidecar:
    service: [svc]
    resources:
      <<: *res
      time: 1h`))
	if len(cells) != 2 || cells[0].Resources.Mem != "8G" {
		t.Fatalf("cells %+v", cells)
	}
}

func TestSlurmTime(t *testing.T) {
	for in, want := range map[string]string{
		"90m": "01:30:00", "1h30m": "01:30:00", "45": "00:45:00", "10:30": "00:10:30",
		"02:00:00": "02:00:00", "2-00:00:00": "2-00:00:00", "1-12": "1-12:00:00", "36h": "1-12:00:00",
	} {
		d, err := ParseDuration(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := SlurmTime(d); got != want {
			t.Errorf("%s: got %s want %s", in, got, want)
		}
	}
	for _, bad := range []string{"", "0", "-5m", "1:60", "x", "1:2:3:4", "a-01"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Every shipped spec parses and expands; the CI lanes keep the seed's
// policies (validity rules, infra retries, the 2P+1D lane verdicts only).
func TestShippedSpecs(t *testing.T) {
	paths, _ := filepath.Glob("../examples/lanes/*.yaml")
	paths = append(paths, "../examples/phase1.yaml", "../examples/quickstart.yaml")
	for _, p := range paths {
		s, cells, _, err := LoadCells(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(cells) == 0 {
			t.Errorf("%s: no cells", p)
		}
		if strings.Contains(p, "lanes/") && (s.Retry.Infra != 1 || len(s.Cases) == 0) {
			t.Errorf("%s: retry.infra %d, %d cases with rules", p, s.Retry.Infra, len(s.Cases))
		}
		if strings.HasSuffix(p, "phase1-2p1d.yaml") {
			if !s.Topologies["disagg-2p1d-sidecar"].VerdictsOnly {
				t.Errorf("%s: the shared-GPU lane is not verdicts only", p)
			}
			// The seed's lane: TC-01..04 and TC-06.
			for _, c := range cells {
				if got := strings.Join(c.Cases, ","); got != "TC-01,TC-02,TC-03,TC-04,TC-06" {
					t.Errorf("%s: cell %s runs %s, want the seed's TC-01..04 and TC-06", p, c.Name, got)
				}
			}
		}
	}
}

// An engine's unsupported cases and topology kinds are left out of the
// grid and counted; an include that asks for one is refused where it is.
func TestEngineUnsupported(t *testing.T) {
	src := edit(t, "matrix:", `engines:
  vllm: {}
  sglang: {unsupported: {cases: [TC-02], kinds: [disagg-2p1d]}}
matrix:`)
	src = strings.Replace(src, "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}\n  disagg-2p1d:\n    resources: {gpus_per_node: 2, time: 30m}", 1)
	src = strings.Replace(src, "  topology: [aggregated]", "  topology: [aggregated, disagg-2p1d]", 1)
	s, err := Parse("sweep.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, c.Engine+"/"+c.Topology+":"+strings.Join(c.Cases, ","))
	}
	if want := "vllm/aggregated:TC-01,TC-02 vllm/disagg-2p1d:TC-01,TC-02 sglang/aggregated:TC-01"; strings.Join(got, " ") != want {
		t.Errorf("cells %v, want %s", got, want)
	}
	// A combination is counted once, under the first reason: its case.
	want := []LeftOut{{"sglang", "case TC-02", 2}, {"sglang", "kind disagg-2p1d", 1}}
	if !reflect.DeepEqual(s.LeftOut, want) {
		t.Errorf("LeftOut = %+v, want %+v", s.LeftOut, want)
	}

	bad := strings.Replace(src, "  case: [TC-01, TC-02]", "  case: [TC-01, TC-02]\n  include:\n    - {engine: sglang, topology: aggregated, geometry: g4b, case: TC-02}", 1)
	s, err = Parse("sweep.yaml", []byte(bad))
	if err == nil {
		_, err = Expand(s)
	}
	if err == nil || !strings.Contains(err.Error(), "matrix.include[0]: {engine: sglang, topology: aggregated, geometry: g4b, case: TC-02} asks engine sglang for case TC-02, which it does not support (engines.sglang.unsupported)") {
		t.Errorf("an include of an unsupported combination: %v", err)
	}
	_, err = Parse("sweep.yaml", []byte(strings.Replace(src, "kinds: [disagg-2p1d]", "kinds: [disagg]", 1)))
	if err == nil || !strings.Contains(err.Error(), `engines.sglang.unsupported.kinds[0]: unknown topology kind "disagg"`) {
		t.Errorf("an unknown kind: %v", err)
	}
}

// services: etcd and nats, each once, at the top and per engine; anything
// else refused where it stands.
func TestServices(t *testing.T) {
	src := `version: 1
name: s
services: [etcd, nats]
harness: {command: [h]}
engines:
  vllm: {}
  vllm-bare: {services: []}
topologies: {aggregated: {}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm, vllm-bare], topology: [aggregated], geometry: [g], case: [TC-01]}
`
	s, err := Parse("sweep.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Services, []string{"etcd", "nats"}) || s.Engines["vllm"].Services != nil ||
		s.Engines["vllm-bare"].Services == nil || len(*s.Engines["vllm-bare"].Services) != 0 || !s.Engines["vllm-bare"].OwnJob() {
		t.Errorf("services: %v, vllm %v, vllm-bare %v", s.Services, s.Engines["vllm"].Services, s.Engines["vllm-bare"].Services)
	}
	for bad, want := range map[string]string{
		"services: [etcd, nats, redis]": `sweep.yaml:3:24: services[2]: unknown service "redis" (expected one of: etcd, nats)`,
		"services: [nats, nats]":        `sweep.yaml:3:18: services[1]: "nats" is listed twice`,
	} {
		_, err := Parse("sweep.yaml", []byte(strings.Replace(src, "services: [etcd, nats]", bad, 1)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", bad, err, want)
		}
	}
}
