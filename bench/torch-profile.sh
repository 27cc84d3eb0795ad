#!/usr/bin/env bash
# bench/torch-profile.sh [KVSWEEP]: a profiled case's window for real on a
# GPU host, through kvsweep's own code: kvsweep job case start and end
# around a case of a sweep directory whose manifest asks for a profile,
# against a minimal engine (bench/torch-profile-engine.py) whose profiler
# routes are backed by the host's PyTorch profiler and CUDA profiler.
#
#   1. torch: the engine's /start_profile starts torch.profiler (CPU and
#      CUDA activities), /stop_profile writes its trace into the output_dir
#      kvsweep sends; the trace files under the cell's profile folder are
#      listed with their sizes and the number of GPU kernel events in them.
#   2. nsys (when nsys is on the PATH): the engine starts through
#      kvsweep job case wrap 0, so it runs under nsys profile with
#      --capture-range cudaProfilerApi; the case's window opens and closes
#      the range (cudaProfilerStart/Stop); the engine is stopped and the
#      .nsys-rep report listed, with nsys stats' kernel summary.
#   3. profile.jsonl, kvsweep's record of each step, for both.
#
# Needs python3 with torch (a GPU for CUDA events); KVSWEEP is a kvsweep
# binary (default: go build ./cmd/kvsweep into a temporary directory).
# WINDOW (seconds, default 3) is how long the case runs. Writes to stdout,
# and keeps the files under $OUT when OUT is set. Run from the repository
# root:  bench/torch-profile.sh [path/to/kvsweep]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ -n "${OUT:-}" ]; then
		mkdir -p "$OUT"
		cp -r "$work/sweeps" "$OUT/" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
kvsweep=${1:-}
if [ -z "$kvsweep" ]; then
	go build -tags lite -o "$work/kvsweep" ./cmd/kvsweep
	kvsweep=$work/kvsweep
fi
kvsweep=$(realpath "$kvsweep")
WINDOW=${WINDOW:-3}
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'

# sweep TOOL: a sweep directory whose manifest profiles case TC-01 of
# worker 0 with TOOL, and its one cell; prints the cell directory.
sweep() {
	local d=$work/sweeps/$1
	mkdir -p "$d/cells/c1"
	printf '{"schema_version": 1, "sweep_id": "bench-%s", "name": "bench", "profile": {"tool": "%s", "cases": ["TC-01"], "workers": ["0"]}, "jobs": [], "cells": []}\n' "$1" "$1" >"$d/manifest.json"
	echo "$d/cells/c1"
}

# engine CELL MODE [WRAP...]: the engine started (through WRAP...), its
# endpoint listed as worker 0; sets ENGINE to its pid.
engine() {
	local cell=$1 mode=$2
	shift 2
	"$@" python3 "$here/torch-profile-engine.py" "$cell/port" "$mode" >"$cell/engine.log" 2>&1 &
	ENGINE=$!
	pids+=("$ENGINE")
	local i=0
	until [ -s "$cell/port" ]; do
		i=$((i + 1))
		if [ "$i" -gt 600 ]; then echo "the engine never started:" && cat "$cell/engine.log" && exit 1; fi
		sleep 0.1
	done
	echo "http://127.0.0.1:$(cat "$cell/port")/metrics engine=sglang name=0" >"$cell/telemetry-endpoints"
}

# window CELL: case TC-01 through kvsweep job case start and end.
window() {
	export KVSWEEP_CELL_DIR=$1 KVSWEEP_SWEEP_DIR
	KVSWEEP_SWEEP_DIR=$(dirname "$(dirname "$1")")
	"$kvsweep" job case start -- TC-01
	sleep "$WINDOW"
	local t0 t1
	t0=$(date +%s.%N)
	"$kvsweep" job case end -- TC-01
	t1=$(date +%s.%N)
	echo "job case end (stop_profile, trace written) took $(awk "BEGIN { print $t1 - $t0 }") s"
}

echo "## 1. torch: the engine's torch.profiler over the case's window"
cell=$(sweep torch)
engine "$cell" torch
window "$cell"
find "$cell/profile" -type f -name '*.pt.trace.json.gz' -printf '%s bytes  %p\n'
for f in "$cell"/profile/torch/TC-01/0/*.pt.trace.json.gz; do
	python3 - "$f" <<'PY'
import gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
kern = [e for e in ev if e.get("cat") == "kernel"]
print(f"{sys.argv[1]}: {len(ev)} events, {len(kern)} GPU kernel events" + (f", e.g. {kern[0]['name'][:60]}" if kern else ""))
PY
done
echo "## profile.jsonl"
cat "$cell/profile/profile.jsonl"

echo "## 2. nsys: the engine under kvsweep job case wrap, the range opened by the case's window"
if command -v nsys >/dev/null 2>&1; then
	nsys --version
	cell=$(sweep nsys)
	export KVSWEEP_CELL_DIR=$cell KVSWEEP_SWEEP_DIR=$work/sweeps/nsys
	engine "$cell" cuda "$kvsweep" job case wrap 0 --
	window "$cell"
	kill -INT "$ENGINE" 2>/dev/null || true
	wait "$ENGINE" 2>/dev/null || true
	find "$cell/profile" -type f -name '*.nsys-rep' -printf '%s bytes  %p\n'
	for f in "$cell"/profile/*.nsys-rep; do
		nsys stats --report cuda_gpu_kern_sum --format csv "$f" 2>/dev/null | head -n 5 || true
	done
	echo "## profile.jsonl"
	cat "$cell/profile/profile.jsonl"
	tail -n 5 "$cell/engine.log"
else
	echo "nsys is not on the PATH: skipped"
fi
