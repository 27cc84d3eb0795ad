#!/usr/bin/env bash
# bench/fingerprint.sh KVSWEEP OUT: the hardware fingerprint for real, on
# a machine with an NVIDIA GPU: a one-cell sweep of one GPU on the local
# executor (--gpus all), collected and reported, so the cell's row shows
# the GPU model, driver and CUDA as nvidia-smi reports them. KVSWEEP is a
# kvsweep binary (the lite build is enough); OUT receives the report, the
# cell's recorded facts and nvidia-smi's own summary to compare with.
set -euo pipefail
kvsweep=$(realpath "$1")
out=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
nvidia-smi --query-gpu=name,driver_version,memory.total,uuid --format=csv >"$out/nvidia-smi-query.csv"
nvidia-smi >"$out/nvidia-smi.txt"
cat >harness.sh <<'H'
#!/bin/sh
# A harness stand-in: one passing case, and which GPU it saw.
mkdir -p "$1"
printf '{"schema_version": 1, "cell_id": "%s", "cases": [{"id": "TC-01", "verdict": "PASS", "message": "CUDA_VISIBLE_DEVICES=%s"}]}\n' \
	"$KVSWEEP_CELL_ID" "${CUDA_VISIBLE_DEVICES:-}" >"$1/result.json"
H
chmod 755 harness.sh
cat >spec.yaml <<S
version: 1
name: fingerprint
scheduler: local
container: {runtime: none}
harness:
  command: [$work/harness.sh, "{{.CellDir}}"]
  cases_flag: ""
topologies: {aggregated: {resources: {gpus_per_node: 1, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
S
"$kvsweep" run spec.yaml --out sweep --gpus all --quiet
"$kvsweep" collect sweep --store history.db >/dev/null
"$kvsweep" report sweep --format table | tee "$out/report.txt"
"$kvsweep" report sweep --format json >"$out/report.json"
cp sweep/cells/*/hardware.env "$out/"
cp sweep/cells/*/nvidia-smi.xml "$out/"
