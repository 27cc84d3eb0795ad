#!/usr/bin/env bash
# generate.sh: remake the committed test sweeps with the local executor and
# the simulated harness. Their results carry run times, so regenerating
# changes golden files: review the diff (go test ./reports -update).
#
#   mixed/  one cell per outcome: OK, a failed case, HARNESS_FAILED,
#           MISSING (no result; time limit), INVALID (garbage)
#   base/   2 topologies x 5 repeats, the simulator's normal figures
#   cand/   the same cells: aggregated fails TC-04, disagg is 30% slower
set -euo pipefail
cd "$(dirname "$0")"
bin=$(mktemp -d)/kvsweep
(cd ../.. && go build -o "$bin" ./cmd/kvsweep)
harness=$(cd ../../examples/harness && pwd)/phase1_sim.py

mk() { # NAME SWEEP-ID SIM-TEMPLATE AXES TIME KVCR-COMMIT
	rm -rf "$1"
	cat >"/tmp/kvsweep-$1.yaml" <<SPEC
version: 1
name: $1
scheduler: local
container: {runtime: none, image: "registry.example.com/kvcr/quick-start-vllm:v0.2.0@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"}
harness:
  command: [python3, "$harness", --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}", --sim, '$3']
topologies:
  aggregated: {resources: {time: $5}}
  disagg-2p1d-shared: {kind: disagg-2p1d, resources: {gpus_per_node: 2, time: $5}, args: [--topology, disagg]}
geometries: {qwen3.5-4b: {flags: {model: Qwen/Qwen3.5-4B}}}
matrix:
  engine: [vllm]
  geometry: [qwen3.5-4b]
  case: [TC-01, TC-02, TC-04, TC-06]
$4
SPEC
	"$bin" render "/tmp/kvsweep-$1.yaml" --out "$1" --sweep-id "$2" >/dev/null
	"$bin" submit "$1" --parallel 4 >/dev/null || true
	rm -rf "$1/logs" "$1/cells"/*/slurm-*.out
	# What a job copies out of the image (/opt/kvcr-build/source-revisions.json).
	for c in "$1"/cells/*/; do
		cat >"$c/source-revisions.json" <<REVS
{"schema_version": 1,
 "components": {
  "dynamo": {"repo": "https://github.com/ai-dynamo/dynamo", "ref": "v0.6.0", "commit": "5f3a1c09b2e4d7a8c6b5e4f3a2b1c0d9e8f7a6b5", "dirty": false},
  "vllm_adapter": {"repo": "https://github.com/vllm-project/vllm", "ref": "kvcr-adapter", "commit": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", "dirty": false},
  "kvcr": {"repo": "https://github.com/ai-dynamo/kvcr", "ref": "main", "commit": "$6", "dirty": false}},
 "base": {"name": "vllm/vllm-openai:v0.11.0", "digest": "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"}}
REVS
	done
	# The frozen spec names this machine's harness path; keep the file portable.
	sed -i "s|$harness|examples/harness/phase1_sim.py|" "$1/spec.yaml" "$1/manifest.json"
}

mk mixed mixed-1 '{{index .Params "sim"}}' '  topology: [aggregated]
  sim: [pass, "fail-case:TC-04", "exit:3", no-result, garbage, "sleep:30"]' 3s 0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d
mk base base-1 '' '  topology: [aggregated, disagg-2p1d-shared]
  repeat: ["1", "2", "3", "4", "5"]' 1m 0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d
mk cand cand-1 '{{if eq .Topology "aggregated"}}fail-case:TC-04{{else}}slow:1.3{{end}}' '  topology: [aggregated, disagg-2p1d-shared]
  repeat: ["1", "2", "3", "4", "5"]' 1m 9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d
echo "regenerated mixed/, base/, cand/"
