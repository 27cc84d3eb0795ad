#!/usr/bin/env bash
# bench/run.sh: every benchmark of the project, one after the other, on
# this machine, with the services they need started and stopped through
# the project's own scripts (a test slot of their own). Prints each
# benchmark's figures (medians with min and max; RUNS sets the repeats,
# default 5), then the lines that carry the ratios and targets, with the
# date and the machine. Needs root, like scripts/test.sh.
#
#   bench/run.sh            everything
#   bench/run.sh collect    only some: render, submit, collect, image, staging, history,
#                           history-query, paced, followers, sweep, kube
set -euo pipefail
cd "$(dirname "$0")/.."
export RUNS=${RUNS:-5}
# Slots 50-65: beside the test slots (0-49), and low enough for the
# clusters' FirstJobId (slot x 1,000,000) to stay under Slurm's MaxJobId.
export KVSWEEP_TEST_SLOT=${KVSWEEP_TEST_SLOT:-$((50 + $$ % 16))}
[ $# -gt 0 ] || set -- render submit collect image paced followers sweep kube
out=$(mktemp)
started=()
stop() {
	for s in "${started[@]}"; do scripts/"$s"-env.sh stop >/dev/null 2>&1 || true; done
	rm -f "$out"
}
trap stop EXIT
need() { # start a service set once
	case " ${started[*]} " in *" $1 "*) return ;; esac
	scripts/"$1"-env.sh install
	# Registered before it starts: a start that fails half-way is stopped too.
	started+=("$1")
	scripts/"$1"-env.sh start
	eval "$(scripts/"$1"-env.sh env)"
}
section() { printf '\n## %s\n\n' "$1" | tee -a "$out"; }

for b in "$@"; do
	case $b in
	render)
		section "plan + render of 10,000 cells (go test ./render -bench 10k, $RUNS runs)"
		go test ./render -run XXX -bench 10k -benchtime 5x -count "$RUNS" -benchmem | grep '^BenchmarkPlanRender10k' >"$out.render"
		ms=$(awk '{print $3 / 1e6}' "$out.render" | sort -n | awk '{v[NR]=$1} END {printf "median %.0f ms (min %.0f, max %.0f) of %d", v[int((NR+1)/2)], v[1], v[NR], NR}')
		mb=$(awk '{print $5 / 1048576}' "$out.render" | sort -n | awk '{v[NR]=$1} END {printf "%.0f", v[int((NR+1)/2)]}')
		echo "plan+render 10k cells: $ms, $mb MB allocated (target: under 300 ms / 100 MB)" | tee -a "$out"
		rm -f "$out.render"
		;;
	submit)
		need slurm
		section "submit and poll of 1,000 held cells on the test cluster"
		bench/submit.sh 1000 | tee -a "$out"
		;;
	collect)
		section "collect + report of 10,000 results"
		bench/collect.sh | tee -a "$out"
		section "collect + report of 100,000 results (once; is it linear?)"
		RUNS=1 PYSCHEMA=0 bench/collect.sh 5000 | sed 's/^/100k: /' | tee -a "$out"
		;;
	staging)
		need runtime
		need slurm
		need buildkit
		section "a 20-cell sweep under pyxis: the image staged once vs imported in every job step ($RUNS runs)"
		go test ./e2e -run XXX -bench Staging -benchtime 1x -count "$RUNS" -timeout 60m >"$out.staging"
		for mode in staged none; do
			for unit in imports/sweep s-to-first-harness; do
				grep "^BenchmarkStaging/$mode" "$out.staging" |
					awk -v u="$unit" '{for (i = 3; i < NF; i += 2) if ($(i + 1) == u) print $i}' | sort -g |
					awk -v m="$mode" -v u="$unit" '{v[NR] = $1} END {printf "%s: %s median %g (min %g, max %g) of %d\n", m, u, v[int((NR + 1) / 2)], v[1], v[NR], NR}'
			done
		done | tee -a "$out"
		rm -f "$out.staging"
		;;
	history)
		section "the history store: report --history over 1,000 runs, one collect of 10,000 results into it, bbolt vs PostgreSQL ($RUNS runs)"
		go test ./e2e -run XXX -bench HistoryStore -benchtime 1x -count "$RUNS" -timeout 60m >"$out.history"
		for what in history-1000/bolt history-1000/postgres collect-10000/none collect-10000/bolt collect-10000/postgres; do
			grep "^BenchmarkHistoryStore/$what-" "$out.history" | awk '{print $3 / 1e6}' | sort -g |
				awk -v w="$what" '{v[NR] = $1} END {printf "%s: median %.0f ms (min %.0f, max %.0f) of %d\n", w, v[int((NR + 1) / 2)], v[1], v[NR], NR}'
		done | tee "$out.hist"
		cat "$out.hist" >>"$out"
		awk '{m[$1] = $3} END {printf "ratio postgres/bolt: report --history %.2f, collect %.2f; collect into postgres / without a store %.2f\n", m["history-1000/postgres:"] / m["history-1000/bolt:"], m["collect-10000/postgres:"] / m["collect-10000/bolt:"], m["collect-10000/postgres:"] / m["collect-10000/none:"]}' "$out.hist" | tee -a "$out"
		rm -f "$out.history" "$out.hist"
		;;
	history-query)
		section "history queries over ${BENCH_RUNS:-20000} stored runs of 50 cells, answered by the store vs every run read and filtered (once)"
		KVSWEEP_BENCH_RUNS=${BENCH_RUNS:-20000} go test ./history -run XXX -bench HistoryQuery -benchtime 1x -count 1 -timeout 120m >"$out.query"
		for st in bolt postgres; do
			for q in filter nodes baseline; do
				scan=$(grep "^BenchmarkHistoryQuery/$st/$q/scan-" "$out.query" | awk '{print $3 / 1e6}')
				query=$(grep "^BenchmarkHistoryQuery/$st/$q/query-" "$out.query" | awk '{print $3 / 1e6}')
				awk -v s="$st" -v q="$q" -v a="$scan" -v b="$query" 'BEGIN {printf "%s %s: query %.0f ms, scan %.0f ms, %.0fx (target: query under 1000 ms)\n", s, q, b, a, a / b}'
			done
		done | tee -a "$out"
		rm -f "$out.query"
		;;
	image)
		need buildkit
		section "image builds against buildctl"
		bench/image.sh | tee -a "$out"
		;;
	paced)
		need slurm
		section "a sweep of ${PACED_CELLS:-20000} cells larger than the queue lets in (once)"
		bench/scale.sh paced "${PACED_CELLS:-20000}" | tee -a "$out"
		;;
	followers)
		need slurm
		section "20 sweeps followed at once: controller calls per interval, shared polls vs not ($RUNS runs)"
		bench/scale.sh followers | tee -a "$out"
		;;
	sweep)
		need slurm
		section "a whole small sweep against sbatch --wait ($RUNS runs)"
		bench/scale.sh sweep | tee -a "$out"
		;;
	kube)
		need runtime
		need slurm
		need buildkit
		need k8s
		section "Kubernetes at 1,000 cells: submit against creating the same Jobs, one poll of 1,000 pods ($RUNS runs)"
		RUNS=$RUNS go test ./e2e -run XXX -bench KubeScale -benchtime 1x -count 1 -timeout 60m >"$out.kube"
		kube=$(grep '^BenchmarkKubeScale' "$out.kube")
		val() { echo "$kube" | awk -v u="$1" '{for (i = 3; i < NF; i += 2) if ($(i + 1) == u) print $i}'; }
		three() { printf 'median %s (min %s, max %s) of %s' "$(val "$1-median")" "$(val "$1-min")" "$(val "$1-max")" "$RUNS"; }
		{
			echo "k8s submit of 1,000 cells (10 Jobs), kvsweep: $(three submit-kvsweep-ms) ms, $(val submit-kvsweep-requests-median) requests"
			echo "k8s creating the same 10 Jobs with client-go: $(three submit-create-ms) ms"
			awk -v a="$(val submit-kvsweep-ms-median)" -v b="$(val submit-create-ms-median)" 'BEGIN {printf "ratio k8s submit of 1,000 cells / creating the same Jobs: %.2fx (target: at most 1.5x)\n", a / b}'
			echo "k8s status poll of 1,000 pods: $(three poll-ms) ms, $(val poll-calls-median) list calls in $(val poll-requests-median) requests (target: at most 2 list calls, paged)"
		} | tee -a "$out"
		rm -f "$out.kube"
		;;
	*)
		echo "bench/run.sh: unknown benchmark $b (expected render, submit, collect, image, staging, history, history-query, paced, followers, sweep, kube)" >&2
		exit 2
		;;
	esac
done

printf '\n## Summary (%s, %s, %s CPUs)\n\n' "$(date -u +%Y-%m-%d)" "$(uname -m)" "$(nproc)"
grep -E 'ratio|speed-up|target|median' "$out" | sed 's/^/- /'
