#!/bin/sh
# A stand-in for a cell that serves vLLM and measures it with vLLM's own
# client: the metrics server stand-in runs while kvsweep's scraper reads
# it (listed in telemetry-endpoints), then the client's output -- a real
# bench serve file -- is written where harness.result says.
#   bench-standin.sh CELL_DIR HIT BENCH_JSON
set -eu
cell=$1 hit=$2 bench=$3
here=$(dirname "$0")
python3 "$here/vllm_standin.py" "$cell" "$hit" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
i=0
until [ -s "$cell/port" ]; do
	i=$((i + 1))
	if [ "$i" -gt 600 ]; then echo "bench-standin: the server never started" >&2; exit 3; fi
	sleep 0.1
done
echo "http://127.0.0.1:$(cat "$cell/port")/metrics" >"$cell/telemetry-endpoints"
# Until the scraper has read the server three times (at most 2 minutes).
i=0
until [ "$(grep -c '"vllm:prefix_cache_queries_total"' "$cell/telemetry.jsonl" 2>/dev/null || true)" -ge 3 ]; do
	i=$((i + 1))
	if [ "$i" -gt 600 ]; then echo "bench-standin: the scraper never read the server" >&2; exit 3; fi
	sleep 0.2
done
cp "$bench" "$cell/bench.json"
