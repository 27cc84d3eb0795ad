#!/bin/sh
# A stand-in cell that runs while kvsweep job gpu-sample samples the
# node's GPUs (the stand-in nvidia-smi on the job's PATH): it waits until
# gpu.jsonl holds at least ROWS rows (at most 2 minutes), then writes a
# real bench serve output where harness.result says.
#   gpu-standin.sh CELL_DIR ROWS BENCH_JSON
set -eu
cell=$1 rows=$2 bench=$3
i=0
until [ "$(grep -c '"uuid"' "$cell/gpu.jsonl" 2>/dev/null || true)" -ge "$rows" ]; do
	i=$((i + 1))
	if [ "$i" -gt 600 ]; then echo "gpu-standin: the sampler never wrote $rows rows" >&2; exit 3; fi
	sleep 0.2
done
cp "$bench" "$cell/bench.json"
