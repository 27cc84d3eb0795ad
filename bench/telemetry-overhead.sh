#!/usr/bin/env bash
# bench/telemetry-overhead.sh [KVSWEEP]: what kvsweep's telemetry costs an
# engine under load, on this machine, with a stand-in engine
# (bench/engine_standin.py: tokens streamed and /metrics served by one
# Python process, as vLLM's API server does) and the stand-in nvidia-smi
# (e2e/testdata/nvidia-smi; a real one on PATH is used where there is
# one). Rounds alternate telemetry off and on (on: kvsweep job scrape of
# the engine's /metrics every 1s, the most often a spec allows, and
# kvsweep job gpu-sample every 2s, the default), ROUNDS each (default 6)
# of DURATION seconds (default 8) with CONCURRENCY clients (default 16) streaming
# 64-token requests; prints the median inter-token latency of each
# round, the median of the rounds off and on, and the ratio.
#   bench/telemetry-overhead.sh            builds kvsweep (-tags lite)
#   bench/telemetry-overhead.sh bin/kvsweep
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6} DURATION=${DURATION:-8} CONCURRENCY=${CONCURRENCY:-16}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
kvsweep=${1:-}
if [ -z "$kvsweep" ]; then
	kvsweep=$work/kvsweep
	go build -tags lite -o "$kvsweep" ./cmd/kvsweep
fi
if ! command -v nvidia-smi >/dev/null; then PATH=$PWD/e2e/testdata/nvidia-smi:$PATH; fi
python3 bench/engine_standin.py "$work/port" &
pids+=("$!")
until [ -s "$work/port" ]; do sleep 0.1; done
port=$(cat "$work/port")
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
python3 bench/itl_client.py "$port" "$CONCURRENCY" 64 2 >/dev/null # warm up
: >"$work/off" && : >"$work/on"
for r in $(seq "$ROUNDS"); do
	for mode in off on; do
		n=${#pids[@]}
		if [ "$mode" = on ]; then
			rm -f "$work/telemetry.jsonl"
			"$kvsweep" job scrape --interval 1s --out "$work/telemetry.jsonl" -- "http://127.0.0.1:$port/metrics" &
			pids+=("$!")
			"$kvsweep" job gpu-sample --interval 2s --out "$work/gpu.jsonl" &
			pids+=("$!")
		fi
		read -r itl gaps < <(python3 bench/itl_client.py "$port" "$CONCURRENCY" 64 "$DURATION")
		echo "$itl" >>"$work/$mode"
		printf 'round %d %-3s median ITL %.3f ms (%d gaps)\n' "$r" "$mode" "$itl" "$gaps"
		for p in "${pids[@]:n}"; do { kill "$p"; wait "$p"; } 2>/dev/null || true; done
		pids=("${pids[@]:0:n}")
	done
done
off=$(median <"$work/off")
on=$(median <"$work/on")
scrapes=$(grep -c '"values"' "$work/telemetry.jsonl" || true)
rows=$(grep -c '"uuid"' "$work/gpu.jsonl" || true)
awk -v a="$off" -v b="$on" -v s="$scrapes" -v g="$rows" 'BEGIN {printf "median ITL: off %.3f ms, on %.3f ms, on/off %.4f (%+.2f%%; target within 1%%); the last on round: %d scrapes, %d GPU rows\n", a, b, b/a, (b/a-1)*100, s, g}'
echo "$(date -u +%Y-%m-%dT%H:%MZ) $(uname -m) $(nproc) CPUs"
