#!/bin/sh
# A harness of one case, TC-01, against the stand-in vLLM server, started
# as a harness starts a worker it may be asked to profile: through
# kvsweep job case wrap 0. The case is marked with kvsweep job case
# start/end, which open and close its profile window.
#   profile-harness.sh CELL_DIR PORT nsys|nsys-missing|torch|torch-off
# nsys: the nsys stand-in (nsys-bin/nsys) is on the worker's PATH, as in an
# image that has it; nsys-missing: it is not. torch: the server runs with
# vLLM's --profiler-config (torch, traces under $KVSWEEP_PROFILE_DIR/torch);
# torch-off: without it, so its /start_profile is 404.
set -eu
cell=$1 port=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
kvsweep=${KVSWEEP_BIN:-$KVSWEEP_SWEEP_DIR/bin/kvsweep}
case $mode in
nsys) PATH=$here/nsys-bin:$PATH ;;
torch) set -- --profiler-config "{\"profiler\":\"torch\",\"torch_profiler_dir\":\"$KVSWEEP_PROFILE_DIR/torch\"}" ;;
esac
if [ "$mode" != torch ]; then set --; fi
echo "http://127.0.0.1:$port/metrics engine=vllm name=0" >"$cell/telemetry-endpoints"
PATH=$PATH "$kvsweep" job case wrap 0 -- python3 "$here/vllm_cache_standin.py" --port "$port" "$@" "$cell" &
server=$!
# The worker is stopped, and waited for, before the harness ends: nsys
# writes its report when the worker ends.
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
i=0
until [ -s "$cell/port" ]; do
	i=$((i + 1))
	if [ "$i" -gt 1200 ]; then echo "profile-harness: the server never started" >&2; exit 3; fi
	sleep 0.1
done
"$kvsweep" job case start -- TC-01
# A profiled case with a delay: its window opens after it; the case runs
# until the job has said so in profile.jsonl.
if [ "$mode" = torch ] || [ "$mode" = torch-off ]; then
	i=0
	until grep -q '"event":"start"' "$cell/profile/profile.jsonl" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 1200 ]; then echo "profile-harness: the profile window never opened" >&2; exit 3; fi
		sleep 0.1
	done
fi
python3 - "$port" <<'PY'
import json, sys, urllib.request
for i in range(4):
    prompt = " ".join(f"w{i}-{j}" for j in range(64))
    req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v1/completions",
                                 data=json.dumps({"prompt": prompt}).encode(), method="POST")
    urllib.request.urlopen(req, timeout=60).read()
PY
"$kvsweep" job case end -- TC-01
printf '{"schema_version": 1, "cell_id": "%s", "cases": [{"id": "TC-01", "verdict": "PASS"}]}\n' \
	"$KVSWEEP_CELL_ID" >"$cell/result.json.tmp"
mv "$cell/result.json.tmp" "$cell/result.json"
