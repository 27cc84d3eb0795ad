#!/bin/sh
# A harness of two cases that share their prompts' prefixes, TC-01 (warm)
# then TC-02 (cold), against the stand-in vLLM server whose prefix cache
# persists until /reset_prefix_cache (vllm-project/vllm #52884). Each case
# is marked with kvsweep job case start/end, which resets the cache before
# the cold case as the spec's cache plan says; each window holds two of
# the scraper's reads before the case's requests and two after.
#   cache-harness.sh CELL_DIR PORT ok|fail-reset
set -eu
cell=$1 port=$2 mode=$3
here=$(dirname "$0")
kvsweep=${KVSWEEP_BIN:-$KVSWEEP_SWEEP_DIR/bin/kvsweep}
flags=
if [ "$mode" = fail-reset ]; then flags=--fail-reset; fi
# shellcheck disable=SC2086 # flags is one word or none
VLLM_SERVER_DEV_MODE=1 python3 "$here/vllm_cache_standin.py" --port "$port" $flags "$cell" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
i=0
until [ -s "$cell/port" ]; do
	i=$((i + 1))
	if [ "$i" -gt 1200 ]; then echo "cache-harness: the server never started" >&2; exit 3; fi
	sleep 0.1
done
scrapes() { if [ -e "$cell/telemetry.jsonl" ]; then wc -l <"$cell/telemetry.jsonl"; else echo 0; fi; }
wait_scrapes() {
	want=$(($(scrapes) + $1)) i=0
	until [ "$(scrapes)" -ge "$want" ]; do
		i=$((i + 1))
		if [ "$i" -gt 1200 ]; then echo "cache-harness: the scraper stopped" >&2; exit 3; fi
		sleep 0.1
	done
}
# send: eight prompts of 64 words, none sharing a block with another.
send() {
	python3 - "$port" <<'PY'
import json, sys, urllib.request
for i in range(8):
    prompt = " ".join(f"w{i}-{j}" for j in range(64))
    req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v1/completions",
                                 data=json.dumps({"prompt": prompt}).encode(), method="POST")
    urllib.request.urlopen(req, timeout=60).read()
PY
}
for case in TC-01 TC-02; do
	"$kvsweep" job case start -- "$case"
	wait_scrapes 2
	send
	if [ "$case" = TC-01 ]; then send; fi
	wait_scrapes 2
	"$kvsweep" job case end -- "$case"
done
printf '{"schema_version": 1, "cell_id": "%s", "cases": [{"id": "TC-01", "verdict": "PASS"}, {"id": "TC-02", "verdict": "PASS"}]}\n' \
	"$KVSWEEP_CELL_ID" >"$cell/result.json.tmp"
mv "$cell/result.json.tmp" "$cell/result.json"
