#!/usr/bin/env bash
# bench/collect.sh: collect + report over 10,000 result.json files written
# by the simulated harness, against a python3 standard-library script doing
# the same join and table (bench/collect_py.py), in the same run. Prints the
# median wall time of 3 runs each, peak memory (max RSS) and the ratio.
#
# The stdlib script checks a few fields; kvsweep validates each result
# against the full JSON Schema. For a like-for-like figure the script also
# runs with that schema through Debian's python3-jsonschema, if installed.
#
# Needs: go, python3, GNU time (Debian package "time"); python3-jsonschema.
# Usage: bench/collect.sh [REPEATS]   (cells = 2 engines x 10 geometries x REPEATS; default 500 -> 10,000)
# RUNS sets the repeats of each measurement (default 5); PYSCHEMA=0 leaves
# out the python3-jsonschema baseline (a minute a run at 100,000 results).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-500}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/kvsweep" ./cmd/kvsweep

reps=$(seq 1 "$REPEATS" | sed 's/.*/"&"/' | paste -sd, -)
harness=$(pwd)/examples/harness/phase1_sim.py
cat >"$work/spec.yaml" <<SPEC
version: 1
name: bench
scheduler: local
harness: {command: [python3, "$harness", --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]}
topologies: {aggregated: {resources: {time: 5m}}}
geometries: {g0: {}, g1: {}, g2: {}, g3: {}, g4: {}, g5: {}, g6: {}, g7: {}, g8: {}, g9: {}}
matrix:
  engine: [vllm, sglang]
  topology: [aggregated]
  geometry: [g0, g1, g2, g3, g4, g5, g6, g7, g8, g9]
  case: [TC-01, TC-02, TC-03, TC-04, TC-05, TC-06]
  repeat: [$reps]
SPEC
"$work/kvsweep" render "$work/spec.yaml" --out "$work/sweep" >/dev/null
echo "writing $((20 * REPEATS)) results with the simulated harness..." >&2
python3 bench/gen_results.py "$work/sweep"
sync

# measure NAME CMD...: wall ms and max RSS KiB of one run, to $work/NAME.*
measure() {
	local name=$1
	shift
	local t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -f %M -o "$work/$name.rss" "$@" >"$work/$name.out" 2>"$work/$name.err"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >>"$work/$name.ms"
	cat "$work/$name.rss" >>"$work/$name.rsss"
}
# kvsweep collects and prints the report in one command (collect
# --report), started by /usr/bin/time itself as the Python scripts are;
# kvsweep2 is the same as two commands, collect then report, which reads
# results.json back (through bash, which adds its own start-up).
kv2() {
	"$work/kvsweep" collect "$work/sweep" --no-store --scheduler local >/dev/null &&
		"$work/kvsweep" report "$work/sweep" --format markdown
}
export -f kv2
export work
schema=result/schema/result.v1.json
has_jsonschema=$(python3 -c 'import jsonschema' 2>/dev/null && echo yes || echo no)
[ "${PYSCHEMA:-1}" = 1 ] || has_jsonschema=no
RUNS=${RUNS:-5}
one() {
	case $1 in
	kvsweep) measure kvsweep "$work/kvsweep" collect "$work/sweep" --no-store --scheduler local --report markdown ;;
	kvsweep2) measure kvsweep2 bash -c kv2 ;;
	python) measure python python3 bench/collect_py.py "$work/sweep" ;;
	pyschema) [ "$has_jsonschema" = no ] || measure pyschema python3 bench/collect_py.py --schema "$schema" "$work/sweep" ;;
	esac
}
# The order turns each round, so that no program is always measured
# right after the same one.
for r in $(seq "$RUNS"); do
	case $((r % 3)) in
	1) order="kvsweep python kvsweep2 pyschema" ;;
	2) order="python pyschema kvsweep kvsweep2" ;;
	0) order="pyschema kvsweep2 kvsweep python" ;;
	esac
	for p in $order; do one "$p"; done
done
# A faster wrong answer must not pass: kvsweep's rows (from report --format
# csv) and the script's, cell by case by metric, must be the same.
"$work/kvsweep" report "$work/sweep" --format csv | python3 -c '
import csv, sys
rows = ["\t".join([r["cell"], r["case"], r["verdict"], r["metric"], r["value"]])
        for r in csv.DictReader(sys.stdin) if r["outcome"] == "OK"]
sys.stdout.write("\n".join(sorted(rows)) + "\n")' >"$work/kvsweep.rows"
python3 bench/collect_py.py --rows "$work/sweep" >"$work/python.rows"
# The one-command report is the two commands' byte for byte.
if ! cmp -s "$work/kvsweep.out" "$work/kvsweep2.out"; then
	echo "bench/collect.sh: collect --report and collect; report print different reports:" >&2
	diff "$work/kvsweep.out" "$work/kvsweep2.out" | head -20 >&2
	exit 1
fi
if ! cmp -s "$work/kvsweep.rows" "$work/python.rows"; then
	echo "bench/collect.sh: kvsweep and the Python script disagree:" >&2
	diff "$work/kvsweep.rows" "$work/python.rows" | head -20 >&2
	exit 1
fi
med() { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
span() { sort -n "$1" | awk '{v[NR]=$1} END {printf "min %d, max %d, n=%d", v[1], v[NR], NR}'; }
kv_ms=$(med "$work/kvsweep.ms")
py_ms=$(med "$work/python.ms")
echo "results:               $((20 * REPEATS)) result.json files, $(du -sh "$work/sweep/cells" | cut -f1)"
echo "kvsweep collect+report: median ${kv_ms} ms ($(span "$work/kvsweep.ms")), max RSS $(($(sort -n "$work/kvsweep.rsss" | tail -1) / 1024)) MiB (collect --report)"
echo "  as two commands:        median $(med "$work/kvsweep2.ms") ms ($(span "$work/kvsweep2.ms")), max RSS $(($(sort -n "$work/kvsweep2.rsss" | tail -1) / 1024)) MiB (collect; report)"
echo "python3 stdlib script:  median ${py_ms} ms ($(span "$work/python.ms")), max RSS $(($(sort -n "$work/python.rsss" | tail -1) / 1024)) MiB"
echo "ratio:                  $(awk -v a="$py_ms" -v b="$kv_ms" 'BEGIN {printf "%.2f (python / kvsweep wall time)", a / b}')"
if [ "$has_jsonschema" = yes ]; then
	ps_ms=$(med "$work/pyschema.ms")
	echo "python3 + jsonschema:   median ${ps_ms} ms ($(span "$work/pyschema.ms")), max RSS $(($(sort -n "$work/pyschema.rsss" | tail -1) / 1024)) MiB"
	echo "ratio, same validation: $(awk -v a="$ps_ms" -v b="$kv_ms" 'BEGIN {printf "%.1f (python+jsonschema / kvsweep wall time)", a / b}')"
fi
echo "answers:                the same $(wc -l <"$work/python.rows") cell x case x metric rows (verdicts and values compared)"
echo "report size:            kvsweep $(wc -c <"$work/kvsweep.out") bytes, python $(wc -c <"$work/python.out") bytes"
