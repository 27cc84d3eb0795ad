#!/bin/sh
# A stand-in server with a known knee, for kvsweep search's e2e test: at
# the offered load RATE (req/s) its p99 TTFT is flat at 200 ms up to two
# req/s below KNEE, then rises 150 ms per req/s, crossing a 500 ms SLO
# exactly at KNEE; p99 ITL stays at 20 ms. Each figure carries 3 % noise,
# seeded by the load and the repeat so a run can be told apart from
# another. It writes result.json v1 into CELLDIR and appends
# "CELL RATE REPEAT" to LOG, one line per run, then sleeps SLEEP seconds.
# Usage: knee-harness.sh CELLDIR RATE REPEAT KNEE LOG [SLEEP]
set -eu
dir=$1 rate=$2 repeat=$3 knee=$4 log=$5
mkdir -p "$dir"
echo "${KVSWEEP_CELL_ID:-} $rate $repeat" >>"$log"
sleep "${6:-0}"
awk -v rate="$rate" -v rep="$repeat" -v knee="$knee" -v sweep="${KVSWEEP_SWEEP_ID:-}" -v cell="${KVSWEEP_CELL_ID:-}" 'BEGIN {
	srand(int(rate * 1000) * 31 + rep)
	over = rate - (knee - 2); if (over < 0) over = 0
	ttft = (200 + 150 * over) * (1 + 0.03 * (2 * rand() - 1))
	itl = 20 * (1 + 0.03 * (2 * rand() - 1))
	tput = (rate < knee ? rate : knee) * 0.98
	printf "{\"schema_version\": 1, \"sweep_id\": \"%s\", \"cell_id\": \"%s\", \"cases\": [", sweep, cell
	printf "{\"id\": \"TC-01\", \"verdict\": \"PASS\", \"metrics\": {"
	printf "\"ttft_p99_ms\": {\"value\": %.3f, \"unit\": \"ms\", \"direction\": \"lower\"}, ", ttft
	printf "\"itl_p99_ms\": {\"value\": %.3f, \"unit\": \"ms\", \"direction\": \"lower\"}, ", itl
	printf "\"throughput_req_s\": {\"value\": %.3f, \"unit\": \"req/s\", \"direction\": \"higher\"}, ", tput
	printf "\"failed\": {\"value\": 0, \"unit\": \"count\", \"direction\": \"lower\"}}}]}\n"
}' >"$dir/result.json.tmp"
mv "$dir/result.json.tmp" "$dir/result.json"
