#!/usr/bin/env bash
# bench/gpu-health.sh KVSWEEP OUT: the GPU health snapshots for real, on a
# machine with an NVIDIA GPU. First kvsweep job health by hand: a
# snapshot, a minute of GPU work (a PyTorch matmul loop where python3 has
# torch, else nvidia-smi's own queries), a second snapshot compared with
# the first; then a one-cell sweep on the local executor whose job takes
# both around its harness, collected and reported. KVSWEEP is a kvsweep
# binary (the lite build is enough); OUT receives the snapshots, what the
# comparison said, the cell's files and the report, with nvidia-smi's own
# outputs to compare with.
set -euo pipefail
kvsweep=$(realpath "$1")
out=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
nvidia-smi -q -x >"$out/nvidia-smi-q.xml"
nvidia-smi nvlink -e >"$out/nvidia-smi-nvlink-e.txt" 2>&1 || true
{ dmesg >/dev/null 2>&1 && echo "dmesg: readable" || echo "dmesg: not readable ($(dmesg 2>&1 | head -n 1))"; } >"$out/kernel-log.txt"
"$kvsweep" job health --out "$out/before.json" --node "$(hostname)" --job by-hand | tee "$out/by-hand.log"
start=$(date +%s)
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	python3 - <<'P' | tee -a "$out/by-hand.log"
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
end, n = time.time() + 45, 0
while time.time() < end:
    b = a @ a
    n += 1
torch.cuda.synchronize()
print(f"load: {n} fp16 8192x8192 matmuls in 45 s")
P
else
	echo "load: no PyTorch with CUDA; nvidia-smi queries only" | tee -a "$out/by-hand.log"
	sleep 45
fi
echo "load took $(($(date +%s) - start)) s" >>"$out/by-hand.log"
"$kvsweep" job health --out "$out/after.json" --before "$out/before.json" --fault "$out/gpu-fault" --log "$out/gpu-faults.jsonl" \
	--node "$(hostname)" --job by-hand | tee -a "$out/by-hand.log"
cat >harness.sh <<'H'
#!/bin/sh
# A harness stand-in: one passing case after a few seconds.
mkdir -p "$1"
sleep 5
printf '{"schema_version": 1, "cell_id": "%s", "cases": [{"id": "TC-01", "verdict": "PASS"}]}\n' "$KVSWEEP_CELL_ID" >"$1/result.json"
H
chmod 755 harness.sh
cat >spec.yaml <<S
version: 1
name: gpuhealth
scheduler: local
container: {runtime: none}
harness:
  command: [$work/harness.sh, "{{.CellDir}}"]
  cases_flag: ""
topologies: {aggregated: {resources: {gpus_per_node: 1, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
S
KVSWEEP_BIN=$kvsweep "$kvsweep" run spec.yaml --out sweep --gpus all --quiet
"$kvsweep" collect sweep --store history.db >/dev/null
"$kvsweep" report sweep --format markdown | tee "$out/report.md"
"$kvsweep" report sweep --format json >"$out/report.json"
cp sweep/cells/*/health-*.json sweep/cells/*/health.log "$out/" 2>/dev/null || true
ls sweep/cells/*/ >"$out/cell-files.txt"
