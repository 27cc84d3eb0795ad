package matrix

import (
	"os"
	"strings"
	"testing"
)

// edit returns the minimal spec with old replaced by new (old must occur once).
func edit(t *testing.T, old, new string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Count(s, old) != 1 {
		t.Fatalf("edit: %q occurs %d times in minimal.yaml", old, strings.Count(s, old))
	}
	return strings.Replace(s, old, new, 1)
}

func TestMinimalSpecIsValid(t *testing.T) {
	s, err := Parse("sweep.yaml", []byte(edit(t, "version: 1", "version: 1")))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 {
		t.Fatalf("got %d cells, want 2", len(cells))
	}
}

// Each malformed spec gets exactly one positioned message.
func TestMalformedSpecs(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"unknown top-level key", "name: mini", "name: mini\ntopologis: {}",
			`sweep.yaml:3:1: unknown key "topologis" (expected one of: version, name, scheduler, case_grouping, cluster, kubernetes, container, env, harness, topologies, geometries, matrix, cases, engines, services, telemetry, cache, search, profile, retry)`},
		{"unknown nested key", "{gpus_per_node: 2, time: 30m}", "{gpus: 2, time: 30m}",
			`sweep.yaml:7:17: topologies.aggregated.resources: unknown key "gpus" (expected one of: nodes, gpus_per_node, cpus_per_task, mem, time)`},
		{"wrong type", "gpus_per_node: 2", "gpus_per_node: two",
			`sweep.yaml:7:32: topologies.aggregated.resources.gpus_per_node: "two" is not an integer`},
		{"list where mapping expected", "    flags: {model: m}", "    flags: [model, m]",
			`sweep.yaml:10:12: geometries.g4b.flags: expected a mapping, got a list`},
		{"unknown engine", "engine: [vllm, sglang]", "engine: [vllm, tgi]",
			`sweep.yaml:12:18: matrix.engine: unknown value "tgi" (expected one of: vllm, sglang, or an engine defined under engines)`},
		{"unknown topology", "topology: [aggregated]", "topology: [aggregated, disagg]",
			`sweep.yaml:13:26: matrix.topology: unknown topology "disagg" (defined: aggregated)`},
		{"empty axis", "geometry: [g4b]", "geometry: []",
			`sweep.yaml:14:13: matrix.geometry: empty axis (expected at least one value)`},
		{"duplicate axis value", "case: [TC-01, TC-02]", "case: [TC-01, TC-01]",
			`sweep.yaml:15:17: matrix.case: duplicate value "TC-01"`},
		{"missing axis", "  case: [TC-01, TC-02]\n", "",
			`sweep.yaml:12:3: matrix: missing required axis "case"`},
		{"misspelt axis", "geometry: [g4b]", "geometrys: [g4b]",
			`sweep.yaml:14:3: matrix: missing required axis "geometry" (is "geometrys" a misspelling of it?)`},
		{"exclude matching nothing", "case: [TC-01, TC-02]", "case: [TC-01, TC-02]\n  exclude:\n    - {engine: sglang, case: TC-04}",
			`sweep.yaml:17:7: matrix.exclude[0]: {engine: sglang, case: TC-04} matches no combination of the matrix`},
		{"exclude with unknown axis", "case: [TC-01, TC-02]", "case: [TC-01, TC-02]\n  exclude:\n    - {enigne: sglang}",
			`sweep.yaml:17:8: matrix.exclude[0]: unknown axis "enigne" (axes: engine, topology, geometry, case)`},
		{"incomplete include matching nothing", "case: [TC-01, TC-02]", "case: [TC-01, TC-02]\n  include:\n    - {engine: vllm, case: TC-09, extra: x}",
			`sweep.yaml:17:7: matrix.include[0]: {engine: vllm, case: TC-09, extra: x} matches no combination, and as a new combination it lacks topology, geometry`},
		{"duplicate cell", "case: [TC-01, TC-02]", "case: [TC-01, TC-02]\n  include:\n    - {engine: vllm, topology: aggregated, geometry: g4b, case: TC-03, repeat: '1'}\n    - {engine: vllm, topology: aggregated, geometry: g4b, case: TC-03, repeat: '1'}",
			`sweep.yaml:18:7: duplicate cell {engine=vllm, geometry=g4b, repeat=1, topology=aggregated} (case TC-03): two combinations have the same parameters`},
		{"missing harness command", "  command: [harness, --engine, \"{{.Engine}}\"]", "  cases_flag: --cases",
			`sweep.yaml:4:3: harness: missing required key "command"`},
		{"empty harness command", `command: [harness, --engine, "{{.Engine}}"]`, "command: []",
			`sweep.yaml:4:12: harness.command: empty (expected the harness argv, for example [python3, -m, tests.e2e.phase1])`},
		{"bad duration", "time: 30m", "time: 30 minutes",
			`sweep.yaml:7:41: topologies.aggregated.resources.time: bad duration "30 minutes" (expected a duration like 90m or 1h30m, or Slurm's [D-]HH:MM:SS)`},
		{"negative gpus", "gpus_per_node: 2", "gpus_per_node: -1",
			`sweep.yaml:7:32: topologies.aggregated.resources.gpus_per_node: -1 is out of range (expected an integer from 0 to 64)`},
		{"yaml syntax error", "engine: [vllm, sglang]", "engine: [vllm, sglang",
			`sweep.yaml:13:3: yaml: ',' or ']' must be specified`},
		{"duplicate key", "name: mini", "name: mini\nname: other",
			`sweep.yaml:3:1: yaml: mapping key "name" already defined at [2:1]`},
		{"bad template", `"{{.Engine}}"`, `"{{.Engine"`,
			`sweep.yaml:4:32: harness.command[2]: bad template "{{.Engine": unclosed action`},
		{"template with unknown field", `"{{.Engine}}"`, `"{{.Engin}}"`,
			`sweep.yaml:4:32: harness.command[2]: template "{{.Engin}}" in cell vllm-aggregated-g4b: <.Engin>: can't evaluate field Engin in type *matrix.HarnessData`},
		{"secret in env.set", "name: mini", "name: mini\nenv:\n  set: {HF_TOKEN: hf_abc}",
			`sweep.yaml:4:9: env.set: "HF_TOKEN" looks like a secret; list it under env.pass so its value is taken from the environment at run time and never written`},
		{"unknown runtime", "name: mini", "name: mini\ncontainer: {runtime: podman}",
			`sweep.yaml:3:22: container.runtime: unknown value "podman" (expected one of: pyxis, enroot, apptainer, docker, none)`},
		{"image missing for a runtime", "name: mini", "name: mini\ncontainer: {runtime: pyxis}",
			`sweep.yaml:3:12: container.image: required for runtime "pyxis"`},
		{"staging under a runtime that imports no file", "name: mini", "name: mini\ncontainer: {runtime: docker, image: r/i:1, staging: /scratch/images}",
			`sweep.yaml:3:53: container.staging: runtime docker imports no image file (only pyxis, enroot, apptainer stage one); remove staging`},
		{"staging that is an option", "name: mini", "name: mini\ncontainer: {runtime: pyxis, image: r/i:1, staging: -x}",
			`sweep.yaml:3:52: container.staging: "-x" is not a directory (expected a path, absolute or relative to the sweep directory, or "none")`},
		{"user that is not one", "name: mini", "name: mini\ncontainer: {runtime: docker, image: r/i:1, user: nobody}",
			`sweep.yaml:3:50: container.user: "nobody" is not a user (expected submitter, root, image, or UID[:GID] in digits)`},
		{"user pyxis cannot switch to", "name: mini", "name: mini\ncontainer: {runtime: pyxis, image: r/i:1, user: \"1000:1000\"}",
			`sweep.yaml:3:49: container.user: runtime pyxis runs the container as the submitting user (or as root inside it, user: root); "1000:1000" would have no effect (it is for docker and Kubernetes)`},
		{"client result of an unknown format", `command: [harness, --engine, "{{.Engine}}"]`, `command: [harness, --engine, "{{.Engine}}"]
  result: {format: genai, file: out.json}`,
			`sweep.yaml:5:20: harness.result.format: unknown value "genai" (expected one of: vllm-bench, sglang-bench, aiperf, inference-perf, inference-perf-prometheus)`},
		{"client result by rate without the rates", `command: [harness, --engine, "{{.Engine}}"]`, `command: [harness, --engine, "{{.Engine}}"]
  result: {format: sglang-bench, file: out.jsonl, case_by: request_rate}`,
			`sweep.yaml:5:11: harness.result: case_by request_rate needs cases: {CASE: VALUE} (the request_rate of each case's run)`},
		{"client result file outside the cell", `command: [harness, --engine, "{{.Engine}}"]`, `command: [harness, --engine, "{{.Engine}}"]
  result: {format: vllm-bench, file: ../x.json}`,
			`sweep.yaml:5:38: harness.result.file: "../x.json" is not a path inside the cell directory (expected a relative path without ..)`},
		{"telemetry endpoint that is not a URL", "name: mini", "name: mini\ntelemetry: {endpoints: [\"file:///etc/passwd\"], interval: 100ms}",
			`sweep.yaml:3:25: telemetry.endpoints[0]: "file:///etc/passwd" is not an endpoint (expected an http:// or https:// URL, like http://127.0.0.1:8000/metrics)
sweep.yaml:3:58: telemetry.interval: "100ms" is not an interval (expected a duration from 1s to 10m, like 10s)`},
		{"two-node with one node", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}", "  aggregated:\n    kind: two-node\n    resources: {gpus_per_node: 2, time: 30m}\n    agent: [agent]",
			`sweep.yaml:6:3: topologies.aggregated: kind two-node needs resources.nodes: 2, got 1`},
		{"agent on a kind that starts none", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}\n    agent: [agent]",
			`sweep.yaml:8:12: topologies.aggregated.agent: kind aggregated starts no agent (only two-node does, on its second node); remove agent`},
		{"workers on two-node", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}", "  aggregated:\n    kind: two-node\n    resources: {nodes: 2, gpus_per_node: 2, time: 30m}\n    agent: [agent]\n    workers: 3",
			`sweep.yaml:10:14: topologies.aggregated.workers: a two-node topology's workers are those its placement puts on its nodes (one a node without); remove workers`},
		{"placement twice", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}", "  aggregated:\n    kind: two-node\n    resources: {nodes: 2, gpus_per_node: 1, time: 30m}\n    agent: [agent]\n    placement: {head: [0, 1], remote: [1]}",
			`sweep.yaml:10:16: topologies.aggregated.placement.remote: worker 1 is placed twice`},
		{"placement GPU a node lacks", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}", "  aggregated:\n    kind: two-node\n    resources: {nodes: 2, gpus_per_node: 1, time: 30m}\n    agent: [agent]\n    placement: {head: [0, 1], remote: [2], gpus: [0, 1, 0]}",
			`sweep.yaml:10:16: topologies.aggregated.placement.gpus: worker 1 on GPU 1, but resources.gpus_per_node is 1 (GPUs are numbered from 0 on each node)`},
		{"placement on one node", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}\n    placement: {head: [0], remote: [1]}",
			`sweep.yaml:8:16: topologies.aggregated.placement: kind aggregated runs on one node; placement is for kind two-node`},
		{"workers with no service", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}", "  aggregated:\n    resources: {gpus_per_node: 2, time: 30m}\n    workers: 3",
			`sweep.yaml:8:14: topologies.aggregated.workers: workers is how many kvcr_service containers the job starts, one a worker, and topologies.aggregated has no service; remove workers or add service`},
		{"sbatch option not an option", "name: mini", "name: mini\ncluster: {sbatch: [exclusive]}",
			`sweep.yaml:3:20: cluster.sbatch[0]: "exclusive" is not a long sbatch option (expected --NAME or --NAME=VALUE)`},
		{"platform kvsweep builds no image for", "name: mini", "name: mini\ncluster: {platform: linux/s390x}",
			`sweep.yaml:3:21: cluster.platform: unknown value "linux/s390x" (expected one of: linux/amd64, linux/arm64)`},
		{"unsupported version", "version: 1", "version: 2",
			`sweep.yaml:1:10: version: unsupported version 2 (expected 1)`},
		{"time limit past a year", "time: 30m", "time: 300000-00:00:00",
			`sweep.yaml:7:41: topologies.aggregated.resources.time: bad duration "300000-00:00:00" (expected a duration like 90m or 1h30m, or Slurm's [D-]HH:MM:SS)`},
		{"time limit too long", "time: 30m", "time: 9000h",
			`sweep.yaml:7:41: topologies.aggregated.resources.time: bad duration "9000h" (expected a duration like 90m or 1h30m, or Slurm's [D-]HH:MM:SS)`},
		{"absurd GPU count", "gpus_per_node: 2", "gpus_per_node: 9223372036854775807",
			`sweep.yaml:7:32: topologies.aggregated.resources.gpus_per_node: 9223372036854775807 is out of range (expected an integer from 0 to 64)`},
		{"excludes remove everything", "  case: [TC-01, TC-02]", "  case: [TC-01, TC-02]\n  exclude: [{topology: aggregated}]",
			`sweep.yaml:12:3: matrix: expands to no cells (the excludes remove every combination); a sweep needs at least one`},
		{"double quote for an #SBATCH line", "name: mini", "name: mini\ncluster: {partition: 'gpu\"x'}",
			`sweep.yaml:3:22: cluster.partition: "gpu\"x" contains a double quote, which an #SBATCH line cannot carry`},
		{"image that is an option", "name: mini", "name: mini\ncontainer: {runtime: docker, image: --privileged}",
			`sweep.yaml:3:37: container.image: "--privileged" is not an image reference or file (expected REGISTRY/NAME[:TAG][@sha256:...], or a path to a .sqsh or .sif file, with no spaces and not starting with '-')`},
		{"rule without comparison", "name: mini", "name: mini\ncases: {TC-01: {require: [tokens_generated]}}",
			`sweep.yaml:3:27: cases.TC-01.require[0]: rule "tokens_generated" has no comparison (expected METRIC OP NUMBER with OP one of >= <= == != > <)`},
		{"rule with a word for a number", "name: mini", "name: mini\ncases:\n  TC-02:\n    require: [\"tokens_generated > 0\", \"guard_hits >= five\"]",
			`sweep.yaml:5:39: cases.TC-02.require[1]: rule "guard_hits >= five": "five" is not a number (expected a finite decimal like 5 or 0.25)`},
		{"rule on a topology", "{gpus_per_node: 2, time: 30m}", "{gpus_per_node: 2, time: 30m}\n    require: [\"ttft_ms < 1e999\"]",
			`sweep.yaml:8:15: topologies.aggregated.require[0]: rule "ttft_ms < 1e999": "1e999" is not a number (expected a finite decimal like 5 or 0.25)`},
		{"rules for a case no cell plans", "name: mini", "name: mini\ncases: {TC-09: {require: [x > 0]}}",
			`sweep.yaml:3:9: cases.TC-09: no cell plans case "TC-09" (expected one of: TC-01, TC-02)`},
		{"verdicts_only not a boolean", "{gpus_per_node: 2, time: 30m}", "{gpus_per_node: 2, time: 30m}\n    verdicts_only: sometimes",
			`sweep.yaml:8:20: topologies.aggregated.verdicts_only: "sometimes" is not a boolean (expected true or false)`},
		{"retry out of range", "name: mini", "name: mini\nretry: {infra: 9}",
			`sweep.yaml:3:16: retry.infra: 9 is out of range (expected an integer from 0 to 5)`},
		{"unknown retry class", "name: mini", "name: mini\nretry: {test: 1}",
			`sweep.yaml:3:9: retry: unknown key "test" (expected one of: infra)`},
		{"engine not declared under engines", "name: mini", "name: mini\nengines:\n  vllm: {args: [--enforce-eager]}",
			`sweep.yaml:14:18: matrix.engine: unknown engine "sglang" (defined under engines: vllm)`},
		{"engine image that is an option", "name: mini", "name: mini\nengines:\n  vllm: {}\n  sglang: {image: --privileged}",
			`sweep.yaml:5:19: engines.sglang.image: "--privileged" is not an image reference or file (expected REGISTRY/NAME[:TAG][@sha256:...], or a path to a .sqsh or .sif file, with no spaces and not starting with '-')`},
		{"engine with a secret in env.set", "name: mini", "name: mini\nengines:\n  vllm: {}\n  sglang: {env: {set: {HF_TOKEN: x}}}",
			`sweep.yaml:5:24: engines.sglang.env.set: "HF_TOKEN" looks like a secret; list it under env.pass so its value is taken from the environment at run time and never written`},
		{"engine with a bad template", "name: mini", "name: mini\nengines:\n  vllm: {}\n  sglang: {args: [\"{{.Engin}}\"]}",
			`sweep.yaml:5:19: engines.sglang.args[0]: template "{{.Engin}}" in cell sglang-aggregated-g4b: <.Engin>: can't evaluate field Engin in type *matrix.HarnessData`},
		{"native result pointer that is not one", `  command: [harness, --engine, "{{.Engine}}"]`, "  command: [harness]\n  native_result: {file: out.json, cases: {TC-01: {verdict: status}}}",
			`sweep.yaml:5:60: harness.native_result.cases.TC-01.verdict: "status" is not a JSON pointer (expected /key/0/key, with {case} for the case id)`},
		{"native result file outside the cell", `  command: [harness, --engine, "{{.Engine}}"]`, "  command: [harness]\n  native_result: {file: ../x.json, cases: {}}",
			`sweep.yaml:5:25: harness.native_result.file: "../x.json" is not a path inside the cell directory (expected a relative path without ..)`},
		{"result adapter that is an option", `  command: [harness, --engine, "{{.Engine}}"]`, "  command: [harness]\n  result_adapter: [--rm]",
			`sweep.yaml:5:20: harness.result_adapter[0]: "--rm" is not a command (expected the adapter program, like python3 or /opt/kvcr/adapter.py)`},
		{"missing name", "name: mini\n", "",
			`sweep.yaml:1:1: missing required key "name"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := edit(t, tc.old, tc.new)
			s, err := Parse("sweep.yaml", []byte(src))
			if err == nil {
				_, err = Expand(s)
			}
			if err == nil {
				t.Fatalf("no error for:\n%s", src)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error:\n got: %s\nwant: %s\nspec:\n%s", got, tc.want, src)
			}
		})
	}
}
