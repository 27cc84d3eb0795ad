#!/bin/sh
# A stand-in for the Phase 1 harness that lives in the test image (busybox,
# no Python): it takes the harness's flags, proves it runs in the image by
# reading /opt/kvcr-build/source-revisions.json, and writes result.json v1
# with that record as the image's provenance.
set -eu
engine=vllm topology=aggregated cases=TC-01 results='' waits='' workers=0
while [ $# -gt 0 ]; do
	case $1 in
	--engine) engine=$2; shift 2 ;;
	--topology) topology=$2; shift 2 ;;
	--cases) cases=$2; shift 2 ;;
	--results-dir) results=$2; shift 2 ;;
	--gpus | --gpu-memory-utilization | --external-services | --remote-worker) shift 2 ;;
	# The stand-in's own flag: wait (at most 5 minutes) for FILE to exist,
	# as the real harness waits for its services and the remote worker.
	--wait-file) waits="$waits $2"; shift 2 ;;
	# Start N stand-in Dynamo workers (dynamo-worker-sim.sh beside this
	# file), which need etcd and NATS as Dynamo v1.2.0's do.
	--dynamo-workers) workers=$2; shift 2 ;;
	*) shift ;;
	esac
done
for f in $waits; do
	i=0
	while [ ! -e "$f" ]; do
		i=$((i + 1))
		if [ "$i" -gt 3000 ]; then echo "phase1-sim: $f never appeared" >&2; exit 4; fi
		sleep 0.1
	done
done
i=0
while [ "$i" -lt "$workers" ]; do
	if ! bash "$(dirname "$0")/dynamo-worker-sim.sh" "$i"; then
		echo "phase1-sim: Dynamo worker $i did not start" >&2
		exit 3
	fi
	i=$((i + 1))
done
revs=$(cat /opt/kvcr-build/source-revisions.json)
mkdir -p "$results"
{
	printf '{"schema_version": 1, "sweep_id": "%s", "cell_id": "%s",\n' "${KVSWEEP_SWEEP_ID:-}" "${KVSWEEP_CELL_ID:-}"
	printf ' "params": {"engine": "%s", "topology": "%s"},\n' "$engine" "$topology"
	printf ' "image": {"source_revisions": %s},\n' "$revs"
	printf ' "cases": ['
	sep=
	for c in $(echo "$cases" | tr , ' '); do
		printf '%s{"id": "%s", "verdict": "PASS", "metrics": {"ttft_ms": {"value": 100, "unit": "ms", "direction": "lower"}}}' "$sep" "$c"
		sep=', '
	done
	printf ']}\n'
} >"$results/result.json.tmp"
mv "$results/result.json.tmp" "$results/result.json"
echo "phase1-sim: $engine $topology $cases in $(hostname)"
