#!/usr/bin/env bash
# bench/scale.sh: kvsweep at the scale a team meets, on the test clusters.
#
#   bench/scale.sh paced [CELLS]  a sweep of CELLS (20,000) cells that run
#       `true`, larger than the queue lets in: the cluster with accounting
#       restarted with MaxJobCount=4000 (MinJobAge=30), a QOS of the
#       bench's own with MaxSubmitJobsPerUser=1000. kvsweep run --wait:
#       its wall time, sbatch calls, the most tasks the user had queued,
#       and whether every cell COMPLETED exactly once (one Slurm task per
#       cell, the journal covering each once). Once: RUNS does not apply.
#   bench/scale.sh followers  20 two-cell sweeps, submitted held, followed
#       at once by 20 kvsweep status --watch --interval 2s processes, then
#       released: the sacct and squeue calls a wrapper on their PATH counts,
#       per interval of the span they took, and the same RPCs as slurmctld
#       (sdiag) and slurmdbd (sacctmgr show stats) counted them, with the
#       followers sharing their polls, without (KVSWEEP_POLL_CACHE=off),
#       and one process following all 20 (status DIR... --watch).
#   bench/scale.sh sweep  a whole small sweep, 50 cells of sleep 1, from
#       kvsweep run --wait to the printed report, against sbatch --wait of
#       the same array (the floor), medians of RUNS (5), in turn.
#
# Needs the test clusters: scripts/slurm-env.sh start; eval "$(scripts/slurm-env.sh env)".
set -euo pipefail
cd "$(dirname "$0")/.."
export SLURM_CONF=${KVSWEEP_SLURM_ACCT:?start the test clusters: scripts/slurm-env.sh start; eval \"\$(scripts/slurm-env.sh env)\"}
RUNS=${RUNS:-5}
work=$(mktemp -d)
cleanup=("scancel --user=root >/dev/null 2>&1 || true" "rm -rf $work")
finish() {
	local c
	for c in "${cleanup[@]}"; do eval "$c"; done
}
trap finish EXIT
go build -o "$work/kvsweep" ./cmd/kvsweep
ms() { date +%s%3N; }
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "median %d ms (min %d, max %d) of %d", v[int((NR+1)/2)], v[1], v[NR], NR}'; }
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# spec NAME CELLS COMMAND [EXTRA]: a spec of CELLS cells (a multiple of
# 10) that each run COMMAND, one array.
spec() {
	local cases
	cases=$(seq -f 'TC-%05g' 1 $(($2 / 10)) | paste -sd, -)
	cat >"$work/$1.yaml" <<SPEC
version: 1
name: $1
case_grouping: separate
container: {runtime: none}
harness: {command: [sh, -c, "$3"]}
topologies: {aggregated: {resources: {cpus_per_task: 1, mem: 10M, time: 10m}}}
geometries: {g0: {}, g1: {}, g2: {}, g3: {}, g4: {}, g5: {}, g6: {}, g7: {}, g8: {}, g9: {}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g0, g1, g2, g3, g4, g5, g6, g7, g8, g9], case: [$cases]}
${4:-}
SPEC
}

paced() {
	local cells=${1:-20000} conf=$SLURM_CONF qos=kvsbench$$
	cp "$conf" "$work/slurm.conf.orig"
	cleanup=("cp $work/slurm.conf.orig $conf; scripts/slurm-env.sh ctld-stop acct; scripts/slurm-env.sh ctld-start acct" "${cleanup[@]}")
	grep -v -e '^MaxJobCount=' -e '^MinJobAge=' "$work/slurm.conf.orig" >"$conf"
	printf 'MaxJobCount=4000\nMinJobAge=30\n' >>"$conf"
	scripts/slurm-env.sh ctld-stop acct
	scripts/slurm-env.sh ctld-start acct
	sacctmgr -i add qos "$qos" MaxSubmitJobsPerUser=1000 >/dev/null
	sacctmgr -i modify user root set qos+="$qos" >/dev/null
	cleanup=("sacctmgr -i modify user root set qos-=$qos >/dev/null 2>&1; sacctmgr -i delete qos $qos >/dev/null 2>&1" "${cleanup[@]}")
	spec paced "$cells" true "cluster: {qos: $qos}"
	# The most tasks queued at once, sampled every second.
	(while sleep 1; do squeue -h -r -u root -q "$qos" -o %i 2>/dev/null | wc -l; done >"$work/queued") &
	local sampler=$!
	local t0 t1
	t0=$(ms)
	"$work/kvsweep" run "$work/paced.yaml" --out "$work/paced" --wait --interval 2s --scheduler slurm --quiet >"$work/paced.out" 2>&1
	t1=$(ms)
	kill "$sampler"
	local summary calls most tasks covered
	summary=$(tail -1 "$work/paced.out")
	calls=$(grep -c '"type":"submitted"' "$work/paced/state.jsonl")
	most=$(sort -n "$work/queued" | tail -1)
	local id
	id=$(sed -n 's/^ *"sweep_id": *"\([^"]*\)".*/\1/p' "$work/paced/manifest.json" | head -1)
	# slurmdbd records a job some time after it ends (the controller
	# sends them in batches): count until every cell's task is there, or
	# two minutes pass.
	for _ in $(seq 60); do
		tasks=$(sacct -n -X -P --starttime="now-6hours" --format=JobID,JobName | grep "|kvs\.$id\." | cut -d'|' -f1 | sort -u | wc -l)
		[ "$tasks" -lt "$cells" ] || break
		sleep 2
	done
	covered=$(grep -c '"type":"intent"' "$work/paced/state.jsonl")
	echo "paced sweep of $cells cells (MaxJobCount 4000, QOS MaxSubmitJobsPerUser 1000): $((t1 - t0)) ms, $calls sbatch calls, at most $most tasks queued; $summary; Slurm tasks $tasks for $cells cells (target: every cell COMPLETED exactly once)"
	[ "$tasks" = "$cells" ] || echo "paced: Slurm holds $tasks tasks for $cells cells ($covered submissions)"
}

# rpcs prints the job-info RPCs slurmctld has served (sdiag: squeue's
# REQUEST_JOB_INFO, or REQUEST_JOB_INFO_SINGLE when it asks for one job)
# and the job queries slurmdbd has (sacct's DBD_GET_JOBS_COND), since
# they started.
rpcs() {
	local j d
	j=$(sdiag | awk '($1 == "REQUEST_JOB_INFO" || $1 == "REQUEST_JOB_INFO_SINGLE") && match($0, /count:[0-9]+/) {n += substr($0, RSTART + 6, RLENGTH - 6)} END {print n + 0}')
	d=$(sacctmgr show stats | awk '$1 == "DBD_GET_JOBS_COND" && match($0, /count:[0-9]+/) {print substr($0, RSTART + 6, RLENGTH - 6); exit}')
	echo "${j:-0} ${d:-0}"
}

followers() {
	local mode interval=2
	spec follow 10 "sleep 4"
	for tool in sacct squeue; do
		# shellcheck disable=SC2016 # the wrapper's own expansions
		printf '#!/bin/sh\necho "%s $(date +%%s.%%N)" >>%s/calls.log\nexec %s "$@"\n' "$tool" "$work" "$(command -v "$tool")" >"$work/$tool"
		chmod 755 "$work/$tool"
	done
	for mode in shared unshared one; do
		local per=() ctld=() dbd=()
		for r in $(seq "$RUNS"); do
			local dirs=() pids=() held
			for i in $(seq 20); do
				"$work/kvsweep" render "$work/follow.yaml" --out "$work/$mode-f$r-$i" >/dev/null
				"$work/kvsweep" submit "$work/$mode-f$r-$i" --scheduler slurm --hold >/dev/null
				dirs+=("$work/$mode-f$r-$i")
			done
			: >"$work/calls.log"
			rpcs >"$work/rpcs.before"
			local cache=$work/polls-$mode$r
			[ "$mode" != unshared ] || cache=off
			if [ "$mode" = one ]; then
				PATH=$work:$PATH KVSWEEP_POLL_CACHE=$cache "$work/kvsweep" status "${dirs[@]}" --watch --interval ${interval}s --scheduler slurm --quiet >/dev/null &
				pids+=($!)
			else
				for d in "${dirs[@]}"; do
					PATH=$work:$PATH KVSWEEP_POLL_CACHE=$cache "$work/kvsweep" status "$d" --watch --interval ${interval}s --scheduler slurm --quiet >/dev/null &
					pids+=($!)
				done
			fi
			# Every follower is up and polling held jobs; then they run.
			sleep $((2 * interval))
			held=$(cat "$work/$mode-f$r"-*/state.jsonl | sed -n 's/.*"job_id":"\([0-9]*\)".*/\1/p' | sort -u)
			[ -n "$held" ] || { echo "followers: no job ids in the sweeps' journals" >&2; exit 1; }
			# shellcheck disable=SC2086 # one job id a word
			scontrol release $held
			wait "${pids[@]}"
			rpcs >"$work/rpcs.after"
			# sacct calls per interval over the span the calls took.
			local k
			k=$(awk -v i=$interval '$1 == "sacct" {if (!f || $2 < f) f = $2; if ($2 > l) l = $2} END {print int((l - f) / i) + 1}' "$work/calls.log")
			per+=("$(awk -v k="$k" '$1 == "sacct" {n++} END {printf "%.1f", n / k}' "$work/calls.log")")
			# What the controller and slurmdbd counted themselves.
			read -r j0 d0 <"$work/rpcs.before"
			read -r j1 d1 <"$work/rpcs.after"
			ctld+=("$(awk -v n=$((j1 - j0)) -v k="$k" 'BEGIN {printf "%.1f", n / k}')")
			dbd+=("$(awk -v n=$((d1 - d0)) -v k="$k" 'BEGIN {printf "%.1f", n / k}')")
			awk '{print $1}' "$work/calls.log" | sort | uniq -c | tr '\n' ' ' >"$work/calls.$mode"
		done
		local who="20 followers, $mode polls"
		[ "$mode" != one ] || who="1 follower of the 20 sweeps (status DIR... --watch)"
		echo "$who: sacct calls per ${interval} s interval: median $(median "${per[@]}") of $RUNS (${per[*]}); last run: $(cat "$work/calls.$mode")(target: at most 2 per interval shared)"
		echo "$who, as the servers count them per ${interval} s interval: slurmctld REQUEST_JOB_INFO[_SINGLE] (sdiag) median $(median "${ctld[@]}") (${ctld[*]}), slurmdbd DBD_GET_JOBS_COND (sacctmgr show stats) median $(median "${dbd[@]}") (${dbd[*]})"
	done
}

sweep() {
	spec small 50 "sleep 1"
	printf '#!/bin/sh\n#SBATCH --array=0-49\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=10M\n#SBATCH --time=10\n#SBATCH --output=/dev/null\nsleep 1\n' >"$work/floor.sbatch"
	local kvs=() floor=() i t0 t1
	for i in $(seq "$RUNS"); do
		for who in kv floor; do
			t0=$(ms)
			if [ "$who" = kv ]; then
				"$work/kvsweep" run "$work/small.yaml" --out "$work/small$i" --wait --interval 1s --scheduler slurm --quiet >/dev/null
				"$work/kvsweep" collect "$work/small$i" --store "$work/history.db" --report markdown >/dev/null 2>&1 || true
				t1=$(ms)
				kvs+=($((t1 - t0)))
			else
				(cd "$work" && sbatch --wait --parsable floor.sbatch >/dev/null)
				t1=$(ms)
				floor+=($((t1 - t0)))
			fi
		done
	done
	echo "whole sweep of 50 x sleep 1, kvsweep run --wait + collect --report: $(stats "${kvs[@]}")"
	echo "whole sweep of 50 x sleep 1, sbatch --wait of the array:          $(stats "${floor[@]}")"
	awk -v a="$(median "${kvs[@]}")" -v b="$(median "${floor[@]}")" 'BEGIN {printf "ratio whole sweep kvsweep/sbatch --wait: %.2fx (target: at most 1.1x)\n", a / b}'
}

case ${1:-} in
paced) paced "${2:-20000}" ;;
followers) followers ;;
sweep) sweep ;;
*)
	echo "usage: $0 paced [CELLS] | followers | sweep" >&2
	exit 2
	;;
esac
