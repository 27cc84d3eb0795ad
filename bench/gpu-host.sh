#!/usr/bin/env bash
# bench/gpu-host.sh KVSWEEP OUT: the GPU pool of the local executor on a
# real GPU host (issue: the seed's two-GPU lane). With the kvsweep binary
# given (the lite build is enough) and --gpus all:
#   1. a 2P+1D cell whose three workers do real bf16 matrix products with
#      the host's PyTorch, each recording the physical GPU it ran on
#      (both prefill workers on the task's first GPU, decode on its
#      second) -- refused at submit, naming the pool, on a one-GPU host;
#   2. six one-GPU cells and three no-GPU cells with --parallel 4: no two
#      overlapping GPU cells share a GPU (on one GPU: strictly one after
#      another), the no-GPU cells see no device, every cell collected OK,
#      the report shows each cell's GPU;
#   3. a cell needing three GPUs refused at submit, naming the pool.
# Prints a line per check (ok / FAIL) and exits 1 if one failed.
set -euo pipefail
kvsweep=$(realpath "$1")
out=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
echo "host: $gpus GPU(s): $(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tr '\n' ';')" | tee "$out/summary.txt"
failed=0
check() { # check OK|FAIL WHAT
	echo "$1: $2" | tee -a "$out/summary.txt"
	if [ "$1" != ok ]; then failed=1; fi
}

# The worker stand-in: a few seconds of bf16 matrix products on the
# task's GPU (or none), recording what it saw.
cat >worker.py <<'PY'
import json, os, sys, time
import torch
out, role, dev = sys.argv[1], sys.argv[2], sys.argv[3]
rec = {"role": role, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": time.time()}
rec["devices_seen"] = torch.cuda.device_count()
if dev != "none":
    torch.cuda.set_device(int(dev))
    rec["uuid"] = str(torch.cuda.get_device_properties(int(dev)).uuid)
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    n = 0
    while time.time() - rec["start"] < 3:
        (a @ b).sum().item()
        n += 1
    rec["products"] = n
rec["end"] = time.time()
with open(out, "w") as f:
    json.dump(rec, f)
PY
# The harness stand-in: one worker per --gpus entry (the 2P+1D map) or
# one worker; then result.json v1 with what the workers saw.
cat >harness.sh <<'H'
#!/bin/bash
set -euo pipefail
dir=$1; shift
map=
while [ $# -gt 0 ]; do
	case $1 in
	--gpus) map=$2; shift 2 ;;
	*) shift ;;
	esac
done
pids=()
if [ -n "$map" ]; then
	IFS=, read -r -a devs <<<"$map"
	roles=(prefill-0 prefill-1 decode)
	for i in "${!devs[@]}"; do
		python3 "$WORKER" "$dir/worker-${roles[$i]}.json" "${roles[$i]}" "${devs[$i]}" & pids+=($!)
	done
elif [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
	python3 "$WORKER" "$dir/worker-0.json" worker 0 & pids+=($!)
else
	python3 "$WORKER" "$dir/worker-0.json" worker none & pids+=($!)
fi
for p in "${pids[@]}"; do wait "$p"; done
printf '{"schema_version": 1, "cell_id": "%s", "cases": [{"id": "TC-01", "verdict": "PASS"}]}\n' "$KVSWEEP_CELL_ID" >"$dir/result.json"
H
chmod 755 harness.sh
export WORKER=$work/worker.py

spec() { # spec NAME TOPOLOGIES MATRIX
	cat <<S
version: 1
name: $1
scheduler: local
container: {runtime: none}
env: {pass: [WORKER]}
harness:
  command: [$work/harness.sh, "{{.CellDir}}"]
  cases_flag: ""
topologies:
$2
geometries: {g1: {flags: {model: m1}}, g2: {flags: {model: m2}}, g3: {flags: {model: m3}}}
matrix: $3
S
}

# 1. 2P+1D: the prefill workers share the task's first GPU.
spec p2p1d "  disagg-2p1d: {kind: disagg-2p1d, args: [--gpus, '0,0,1'], resources: {gpus_per_node: 2, time: 10m}}" \
	"{engine: [vllm], topology: [disagg-2p1d], geometry: [g1], case: [TC-01]}" >p2p1d.yaml
if "$kvsweep" run p2p1d.yaml --out p2p1d --gpus all --quiet >"$out/p2p1d.txt" 2>&1; then
	cells=(p2p1d/cells/*/)
	cell=${cells[0]}
	cp "$cell"worker-*.json "$out/" 2>/dev/null || true
	p0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["uuid"])' "$cell/worker-prefill-0.json")
	p1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["uuid"])' "$cell/worker-prefill-1.json")
	d=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["uuid"])' "$cell/worker-decode.json")
	if [ "$p0" = "$p1" ] && [ "$p0" != "$d" ]; then check ok "2P+1D: both prefill workers on $p0, decode on $d"; else check FAIL "2P+1D: prefill $p0 $p1, decode $d"; fi
elif [ "$gpus" -lt 2 ] && grep -q "the local GPU pool has $gpus" "$out/p2p1d.txt"; then
	check ok "2P+1D refused on a $gpus-GPU pool: $(grep -o 'kvsweep.*pool has.*' "$out/p2p1d.txt" | head -n 1)"
else
	check FAIL "2P+1D: $(tail -n 3 "$out/p2p1d.txt")"
fi

# 2. Six one-GPU cells, three without, four at a time.
spec pool "  gpu: {resources: {gpus_per_node: 1, time: 10m}}
  cpu: {resources: {gpus_per_node: 0, time: 10m}}" \
	"{engine: [vllm], topology: [gpu, cpu], geometry: [g1, g2, g3], case: [TC-01], rep: [a, b], exclude: [{topology: cpu, rep: b}]}" >pool.yaml
"$kvsweep" run pool.yaml --out pool --gpus all --parallel 4 --quiet >"$out/pool.txt" 2>&1 || true
"$kvsweep" collect pool --store history.db >>"$out/pool.txt" 2>&1 || true
"$kvsweep" report pool --format table | tee "$out/pool-report.txt"
cat pool/cells/*/worker-0.json >"$out/pool-workers.jsonl"
python3 - "$out/pool-workers.jsonl" "$gpus" <<'PY' | tee -a "$out/summary.txt"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]).read().replace("}{", "}\n{").splitlines() if l.strip()]
gpu = [r for r in recs if "uuid" in r]
cpu = [r for r in recs if "uuid" not in r]
bad = []
for i, a in enumerate(gpu):
    for b in gpu[i + 1:]:
        if a["uuid"] == b["uuid"] and a["start"] < b["end"] and b["start"] < a["end"]:
            bad.append((a["uuid"], a["start"], b["start"]))
most = max((sum(1 for r in gpu if r["start"] <= t < r["end"]) for t in [r["start"] for r in gpu]), default=0)
print(("ok" if len(gpu) == 6 and not bad else "FAIL") + f": {len(gpu)} GPU cells, {len(set(r['uuid'] for r in gpu))} GPU(s) used, at most {most} at once, {len(bad)} overlapping on one GPU")
print(("ok" if len(cpu) == 3 and all(r["devices_seen"] == 0 for r in cpu) else "FAIL") + f": {len(cpu)} no-GPU cells saw {[r['devices_seen'] for r in cpu]} devices")
PY
if grep -q "^FAIL" "$out/summary.txt"; then failed=1; fi
if grep -q "9 cells: 9 OK" "$out/pool-report.txt" && [ "$(grep -c '^ vllm-gpu.*NVIDIA' "$out/pool-report.txt")" = 6 ] &&
	[ "$(grep -c '^ vllm-cpu.*the job has no GPU' "$out/pool-report.txt")" = 3 ]; then
	check ok "9 cells collected OK; the report names each GPU cell's GPU and says the others had none"
else
	check FAIL "the pool sweep's report"
fi

# 3. Three GPUs for one cell: refused at submit, naming the pool.
spec three "  big: {resources: {gpus_per_node: 3, time: 10m}}" "{engine: [vllm], topology: [big], geometry: [g1], case: [TC-01]}" >three.yaml
if ! "$kvsweep" run three.yaml --out three --gpus all --quiet >"$out/three.txt" 2>&1 && grep -q "needs 3 GPUs; the local GPU pool has $gpus" "$out/three.txt"; then
	check ok "a 3-GPU cell refused: $(grep -o 'kvsweep.*pool has.*' "$out/three.txt" | head -n 1)"
else
	check FAIL "the 3-GPU cell: $(tail -n 3 "$out/three.txt")"
fi
exit "$failed"
