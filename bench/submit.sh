#!/usr/bin/env bash
# bench/submit.sh: submission and polling cost on a real Slurm cluster.
#
# Submits a 1,000-cell sweep with kvsweep (job arrays) and the same cells
# with a per-cell sbatch loop (kvsweep render --no-array, then one sbatch
# per script), all held so only submission is measured, and prints both
# wall times, their ratio and the sbatch invocations. Then times one
# kvsweep status poll of the 1,000 cells and counts its controller calls.
#
# Needs the test clusters: scripts/slurm-env.sh start; eval "$(scripts/slurm-env.sh env)".
# Usage: bench/submit.sh [CELLS]   (default 1000; a multiple of 20)
set -euo pipefail
cd "$(dirname "$0")/.."
CELLS=${1:-1000}
export SLURM_CONF=${SLURM_CONF:-${KVSWEEP_SLURM_ACCT:?start the test clusters: scripts/slurm-env.sh start; eval \"\$(scripts/slurm-env.sh env)\"}}

work=$(mktemp -d)
# The user's cache (limits, shared polls) of this run's own: the first
# submit reads the limits, the others take them from it, as a user's
# submissions in a row do. The cold row below reads them every time.
export KVSWEEP_POLL_CACHE=$work/cache
trap 'scancel --user=root >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
go build -o "$work/kvsweep" ./cmd/kvsweep

cases=$(seq -f 'TC-%03g' 1 $((CELLS / 20)) | paste -sd, -)
cat >"$work/spec.yaml" <<SPEC
version: 1
name: bench
case_grouping: separate
harness: {command: ["true"]}
topologies: {aggregated: {resources: {cpus_per_task: 1, mem: 10M, time: 5m}}}
geometries: {g0: {}, g1: {}, g2: {}, g3: {}, g4: {}, g5: {}, g6: {}, g7: {}, g8: {}, g9: {}}
matrix:
  engine: [vllm, sglang]
  topology: [aggregated]
  geometry: [g0, g1, g2, g3, g4, g5, g6, g7, g8, g9]
  case: [$cases]
SPEC

ms() { date +%s%3N; }
max_array=$(scontrol show config | awk '$1 == "MaxArraySize" {print $3}')
RUNS=${RUNS:-5}
# A submit takes tens of milliseconds: three times the samples of the
# other benchmarks, for a median that holds on a noisy machine.
SUBMIT_RUNS=${SUBMIT_RUNS:-$((3 * RUNS))}
# stats V...: "median M ms (min A, max B) of N"
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "median %d ms (min %d, max %d) of %d", v[int((NR+1)/2)], v[1], v[NR], NR}'; }
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# kvsweep submit of the held arrays against the floor: the same sbatch
# calls, read from kvsweep's own dry run, run by bash. Twice: with the test
# cluster's MaxArraySize (one array) and with a slurm.conf that says 250, as
# on a cluster that allows arrays of 250 (four arrays; the controller here
# allows more, so only the client's limit changes).
sed "s/^MaxArraySize=.*/MaxArraySize=250/" "$SLURM_CONF" >"$work/slurm-250.conf"
grep -q '^MaxArraySize=250$' "$work/slurm-250.conf"
for conf in "$SLURM_CONF" "$work/slurm-250.conf"; do
	limit=$(SLURM_CONF=$conf scontrol show config | awk '$1 == "MaxArraySize" {print $3}')
	[ "$conf" = "$SLURM_CONF" ] || limit=250
	kvs=() raws=()
	for i in $(seq "$SUBMIT_RUNS"); do
		rm -rf "$work/arrays$i" "$work/raw$i"
		"$work/kvsweep" render "$work/spec.yaml" --out "$work/arrays$i" >/dev/null
		"$work/kvsweep" render "$work/spec.yaml" --out "$work/raw$i" >/dev/null
		"$work/kvsweep" submit "$work/raw$i" --scheduler slurm --hold --dry-run --max-array-size "$limit" | grep -v '^#' >"$work/raw$i.sh"
		# The renders' writes go to disk before either is timed: the
		# journal's fsync would otherwise carry them.
		sync
		# Each goes first every other round: the one after the other
		# meets a controller still cancelling the first one's jobs.
		order="kv raw"
		[ $((i % 2)) = 1 ] || order="raw kv"
		for who in $order; do
			t0=$(ms)
			if [ "$who" = kv ]; then
				SLURM_CONF=$conf "$work/kvsweep" submit "$work/arrays$i" --scheduler slurm --hold >/dev/null
			else
				SLURM_CONF=$conf bash "$work/raw$i.sh" >/dev/null
			fi
			t1=$(ms)
			if [ "$who" = kv ]; then kvs+=($((t1 - t0))); else raws+=($((t1 - t0))); fi
			scancel --user=root
		done
	done
	calls=$(grep -c '"type":"submitted"' "$work/arrays1/state.jsonl")
	kv_ms=$(median "${kvs[@]}")
	raw_ms=$(median "${raws[@]}")
	[ -n "${first_ms:-}" ] || first_ms=$kv_ms
	{
		echo "MaxArraySize $limit: kvsweep submit:      $(stats "${kvs[@]}"), $calls sbatch call(s)"
		echo "MaxArraySize $limit: the same sbatch calls: $(stats "${raws[@]}")"
		# The target is for a sweep of several arrays; one call's floor is
		# smaller than kvsweep's start-up (docs/performance.md).
		target=" (no target: one call)"
		[ "$calls" -gt 1 ] && target=" (target: at most 1.5x)"
		echo "MaxArraySize $limit: ratio submit/floor:  $(awk -v a="$kv_ms" -v b="$raw_ms" 'BEGIN {printf "%.2fx", a / b}')$target"
	} >>"$work/submit.txt"
done
# The same four-array submit with the limits read from the cluster every
# time (an empty cache each: the first submission of a user in five
# minutes): sacctmgr's round trips to slurmdbd, where limits are enforced.
colds=()
for i in $(seq "$RUNS"); do
	rm -rf "$work/cold"
	"$work/kvsweep" render "$work/spec.yaml" --out "$work/cold" >/dev/null
	sync
	t0=$(ms)
	SLURM_CONF=$work/slurm-250.conf KVSWEEP_POLL_CACHE=$work/cold-cache$i "$work/kvsweep" submit "$work/cold" --scheduler slurm --hold >/dev/null
	t1=$(ms)
	colds+=($((t1 - t0)))
	scancel --user=root
done
echo "MaxArraySize 250: kvsweep submit, limits read anew: $(stats "${colds[@]}") (no target: once per user in five minutes)" >>"$work/submit.txt"
"$work/kvsweep" render "$work/spec.yaml" --out "$work/arrays" >/dev/null
"$work/kvsweep" submit "$work/arrays" --scheduler slurm --hold >/dev/null

# One status poll, with sacct and squeue counted through shims on PATH.
mkdir -p "$work/shims"
for tool in sacct squeue sbatch scontrol; do
	real=$(command -v "$tool")
	printf '#!/bin/sh\necho %s >>"%s/calls"\nexec %s "$@"\n' "$tool" "$work" "$real" >"$work/shims/$tool"
	chmod +x "$work/shims/$tool"
done
polls=()
for _ in $(seq "$RUNS"); do
	: >"$work/calls"
	p0=$(ms)
	PATH=$work/shims:$PATH "$work/kvsweep" status "$work/arrays" --format json >/dev/null
	p1=$(ms)
	polls+=($((p1 - p0)))
done
poll_calls=$(sort "$work/calls" | uniq -c | awk '{printf "%s%d %s", sep, $1, $2; sep=", "}')
scancel --user=root
sleep 2

"$work/kvsweep" render "$work/spec.yaml" --out "$work/single" --no-array >/dev/null
t0=$(ms)
for s in "$work"/single/jobs/*.sbatch; do
	(cd "$work/single" && sbatch --parsable --hold "$s" >/dev/null)
done
t1=$(ms)
loop_ms=$((t1 - t0))
loop_calls=$(find "$work/single/jobs" -name '*.sbatch' | wc -l)

echo "cells:                       $CELLS (1 resource shape, MaxArraySize $max_array)"
cat "$work/submit.txt"
echo "per-cell sbatch loop:        ${loop_ms} ms, $loop_calls sbatch calls"
echo "speed-up over the loop:      $(awk -v a="$loop_ms" -v b="$first_ms" 'BEGIN {printf "%.1fx", a / b}') (kvsweep submit with MaxArraySize $max_array)"
echo "status poll of $CELLS cells:   $(stats "${polls[@]}"), controller calls per poll: $poll_calls"
