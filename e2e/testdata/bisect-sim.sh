#!/bin/sh
# The test harness of kvsweep bisect's e2e test, in the image: each case
# PASSes unless the KVCR checkout's behaviour file (/opt/kvcr/behaviour)
# has a line "CASE FAIL"; ttft_ms is its "ttft_ms VALUE" line (100 by
# default). It records the image's provenance as phase1-sim.sh does.
set -eu
cases=TC-01 results=''
while [ $# -gt 0 ]; do
	case $1 in
	--cases) cases=$2; shift 2 ;;
	--results-dir) results=$2; shift 2 ;;
	--gpus | --gpu-memory-utilization | --external-services | --remote-worker | --engine | --topology) shift 2 ;;
	*) shift ;;
	esac
done
b=/opt/kvcr/behaviour
ttft=$(sed -n 's/^ttft_ms //p' "$b" 2>/dev/null | head -n 1)
revs=$(cat /opt/kvcr-build/source-revisions.json)
mkdir -p "$results"
{
	printf '{"schema_version": 1, "sweep_id": "%s", "cell_id": "%s",\n' "${KVSWEEP_SWEEP_ID:-}" "${KVSWEEP_CELL_ID:-}"
	printf ' "image": {"source_revisions": %s},\n' "$revs"
	printf ' "cases": ['
	sep=
	for c in $(echo "$cases" | tr , ' '); do
		v=PASS
		if grep -qx "$c FAIL" "$b" 2>/dev/null; then v=FAIL; fi
		printf '%s{"id": "%s", "verdict": "%s", "metrics": {"ttft_ms": {"value": %s, "unit": "ms", "direction": "lower"}}}' "$sep" "$c" "$v" "${ttft:-100}"
		sep=', '
	done
	printf ']}\n'
} >"$results/result.json.tmp"
mv "$results/result.json.tmp" "$results/result.json"
echo "bisect-sim: $cases in $(hostname)"
