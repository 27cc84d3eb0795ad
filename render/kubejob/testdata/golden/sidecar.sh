#!/bin/bash
# kvsweep job sidecar of sweep golden-k8s: 1 cell(s) of topology sidecar (sidecar).
# The pods of the Kubernetes Job jobs/sidecar.job.yaml run it ("kvsweep submit" creates the Job).
set -euo pipefail
# A TERM or INT before the exit marker's trap is in place (a cancel in the
# job's first moments) is remembered and acted on once it is, so even
# that job leaves its marker.
EARLY_SIGNAL=
trap 'EARLY_SIGNAL=TERM' TERM
trap 'EARLY_SIGNAL=INT' INT
# Background steps get process groups of their own, so cleanup reaches
# everything they started (etcd, services, srun steps), not just the shell.
set -m

SWEEP_DIR=${KVSWEEP_SWEEP_DIR:?the Job kvsweep submit creates sets KVSWEEP_SWEEP_DIR}
SWEEP_ID=golden-k8s
# The sweep directory names its sweep in sweep.id; a script run from
# another directory stops before it touches anything.
if [ "$(head -c 256 "$SWEEP_DIR/sweep.id" 2>/dev/null)" != "$SWEEP_ID" ]; then
	echo "kvsweep: $SWEEP_DIR is not the directory of sweep $SWEEP_ID" >&2
	exit 2
fi
TABLE=$SWEEP_DIR/jobs/sidecar.cells
ARGS=$SWEEP_DIR/jobs/sidecar.args
# Who this task is, as the exit marker records it: the Job's name (set by
# kvsweep submit) and, for an array, the task its completion index stands
# for in the submission's task list (KVSWEEP_TASKS, --array syntax).
JOB_ID=${KVSWEEP_JOB:?the Job kvsweep submit creates sets KVSWEEP_JOB}
NODE_NAME=${KVSWEEP_NODE:-$(hostname)}
CLUSTER_NAME=${KVSWEEP_CLUSTER:-}
# task_of LIST N: the Nth task id of LIST ("0-3,7,9-10").
task_of() {
	local part lo hi n=$2
	local -a parts
	IFS=, read -r -a parts <<<"$1"
	for part in "${parts[@]}"; do
		lo=${part%-*} hi=${part#*-}
		if [ "$n" -le $((hi - lo)) ]; then
			echo $((lo + n))
			return
		fi
		n=$((n - (hi - lo + 1)))
	done
	return 1
}
ARRAY_JOB_ID=$JOB_ID
ARRAY_TASK_ID=$(task_of "${KVSWEEP_TASKS:?}" "${JOB_COMPLETION_INDEX:?}") || {
	echo "kvsweep: completion index $JOB_COMPLETION_INDEX is outside the tasks $KVSWEEP_TASKS" >&2
	exit 2
}
INDEX=$((ARRAY_TASK_ID + ${KVSWEEP_INDEX_OFFSET:-0}))
LOG_NAME=k8s-${JOB_ID}_${ARRAY_TASK_ID}.out
# Line INDEX+1 of the cell table: the cell id, then where its harness, agent
# and service command lines are in the args file (OFFSET:LENGTH, or -).
read -r -a CELL < <(sed -n "$((INDEX + 1))p" "$TABLE") || true
CELL_ID=${CELL[0]:-}
if [ -z "$CELL_ID" ] || [ "${#CELL[@]}" -ne 4 ]; then
	echo "kvsweep: no cell at index $INDEX of $TABLE" >&2
	exit 2
fi
CELL_DIR=$SWEEP_DIR/cells/$CELL_ID
mkdir -p "$CELL_DIR"
export KVSWEEP_SWEEP_DIR=$SWEEP_DIR KVSWEEP_SWEEP_ID=$SWEEP_ID KVSWEEP_CELL_ID=$CELL_ID KVSWEEP_CELL_DIR=$CELL_DIR
echo "kvsweep: cell $CELL_ID, output in $CELL_DIR/$LOG_NAME"
exec >>"$CELL_DIR/$LOG_NAME" 2>&1

# A previous attempt's outcome moves aside; nothing it wrote is lost. (An
# attempt ended by a node failure may have left no exit marker.)
if [ -e "$CELL_DIR/exit" ] || [ -e "$CELL_DIR/harness-started" ] || [ -e "$CELL_DIR/result.json" ]; then
	prev=$CELL_DIR/attempts/$(date -u +%Y%m%dT%H%M%S)-$$
	mkdir -p "$prev"
	for f in exit result.json source-revisions.json harness-started provenance-mismatch provenance-missing adapter.log adapter-failed hardware.env nvidia-smi.xml nccl-version health-before.json health-after.json health.log gpu-fault; do
		if [ -e "$CELL_DIR/$f" ]; then mv "$CELL_DIR/$f" "$prev/"; fi
	done
fi

# The exit marker is written on every way out, so the outcome is known even
# where accounting is off and squeue has forgotten the job.
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SIGNAL=
CHILDREN=()
write_exit_marker() {
	local rc=$?
	trap - EXIT
	# A second TERM (Slurm signals the script and every process of the
	# step) must not cut the marker short: only KillWait's KILL stops it.
	trap '' TERM INT
	set +m # no job-control notices for the children stopped below
	local c
	for c in "${CHILDREN[@]}"; do
		kill -TERM -- "-$c" 2>/dev/null || kill -TERM "$c" 2>/dev/null || true
	done
	# What the runtime started outside the job's process tree (docker
	# containers) is stopped too.
	if declare -F runtime_cleanup >/dev/null; then runtime_cleanup; fi
	# Written whole or not at all: on a full disk the marker is left out
	# (the scheduler's record still tells how the job ended), never cut
	# short.
	if printf '{"exit_code": %d, "signal": "%s", "started": "%s", "finished": "%s", "job_id": "%s", "array_job_id": "%s", "array_task_id": "%s", "host": "%s", "cluster": "%s"}\n' \
		"$rc" "$SIGNAL" "$STARTED" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$JOB_ID" \
		"$ARRAY_JOB_ID" "$ARRAY_TASK_ID" "$NODE_NAME" "$CLUSTER_NAME" >"$CELL_DIR/.exit.tmp"; then
		mv -f "$CELL_DIR/.exit.tmp" "$CELL_DIR/exit"
	else
		rm -f "$CELL_DIR/.exit.tmp"
		echo "kvsweep: could not write the exit marker $CELL_DIR/exit (exit code $rc): is the file system full?" >&2
	fi
	exit "$rc"
}
trap write_exit_marker EXIT
trap 'SIGNAL=TERM; exit 143' TERM
trap 'SIGNAL=INT; exit 130' INT
case $EARLY_SIGNAL in
TERM) SIGNAL=TERM; exit 143 ;;
INT) SIGNAL=INT; exit 130 ;;
esac

# run_bg starts a command in the background and remembers it for cleanup.
run_bg() {
	"$@" &
	CHILDREN+=("$!")
}

# load_argv NAME OFFSET:LENGTH: read the NUL-separated command line at that
# place of the args file into array NAME, with @CELL_DIR@ replaced by the
# cell directory. No word is ever evaluated by the shell.
load_argv() {
	local -n out=$1
	out=()
	if [ "$2" = - ]; then return; fi
	mapfile -d '' -t out < <(tail -c "+$((${2%%:*} + 1))" "$ARGS" | head -c "${2#*:}")
	local i
	for i in "${!out[@]}"; do
		out[i]=${out[i]//@CELL_DIR@/"$CELL_DIR"}
	done
}
export KVCR_LOG_LEVEL='debug info'
export PYTHONHASHSEED=0
# Variables passed by name: their values come from the submitting
# environment and are never written into this script.
warn_unset() {
	local name
	for name in "$@"; do
		if [ -z "${!name+x}" ]; then echo "kvsweep: warning: $name is not set in the job environment" >&2; fi
	done
}
warn_unset HF_TOKEN


# Kubernetes: the pod is the harness container; every launch runs in it.
launch() {
	shift
	(cd -- /opt/kvcr && "$@")
}

ARGV=()
load_argv ARGV "${CELL[1]}"
echo "kvsweep: cell $CELL_ID on $NODE_NAME, job ${JOB_ID:-?}"

# In the container, before the harness: the image's record of what it was
# built from is copied into the cell directory (in a container, a copy
# that fails is recorded in provenance-missing, never hidden), and compared
# with the commits the spec expects. On a mismatch, provenance-mismatch names each
# component and the harness is never started (exit 65).
# shellcheck disable=SC2016 # the variables belong to the inner shell
PROVENANCE='d=$1; shift
src=/opt/kvcr-build/source-revisions.json
cp "$src" "$d/source-revisions.json" 2>"$d/.provenance.err" ||
	{ echo "the image has no $src: $(cat "$d/.provenance.err")" >"$d/provenance-missing"; }
rm -f "$d/.provenance.err"
bad=
while [ "$1" != -- ]; do
	got=$(tr -d " \t\r\n" <"$d/source-revisions.json" 2>/dev/null | grep -o "\"$1\":{[^}]*}" | grep -o "\"commit\":\"[0-9a-f]*\"" | head -n 1 | cut -d "\"" -f 4)
	[ "$got" = "$2" ] || bad="$bad$1: the image has ${got:-nothing}, the spec expects $2
"
	shift 2
done
shift
if [ -n "$bad" ]; then
	printf "%s" "$bad" >"$d/provenance-mismatch"
	printf "kvsweep: the image does not match the expected commits; the harness is not started:\n%s" "$bad" >&2
	exit 65
fi
# The NCCL wheel the image installed, for the hardware fingerprint.
for p in /usr/lib/python3*/*-packages/nvidia_nccl_cu*.dist-info /usr/local/lib/python3*/*-packages/nvidia_nccl_cu*.dist-info; do
	if [ -d "$p" ]; then v=${p##*-}; echo "${v%.dist-info}" >"$d/nccl-version"; break; fi
done
date -u +%Y-%m-%dT%H:%M:%SZ >"$d/harness-started"
exec "$@"'
EXPECT=(--)

# Services (kvcr_service, the topology's service command): one per worker,
# each in its own container with KVCR_SERVICE_INDEX set, sharing sockets
# and logs with the workers through the services directory. Every kind
# starts them when the topology has a service; they end with the job.
export KVSWEEP_SERVICES_DIR=$CELL_DIR/services
SERVICE_ARGV=()
load_argv SERVICE_ARGV "${CELL[3]}"
# start_services WHERE WORKER...: the services of these workers on the
# head node (WHERE=head) or the second node (WHERE=remote).
start_services() {
	if [ "${#SERVICE_ARGV[@]}" -eq 0 ]; then return; fi
	mkdir -p "$KVSWEEP_SERVICES_DIR"
	local where=$1 worker
	shift
	for worker in "$@"; do
		KVCR_SERVICE_INDEX=$worker run_bg launch "$where" "${SERVICE_ARGV[@]}" >"$KVSWEEP_SERVICES_DIR/service-$worker.log" 2>&1
	done
}

# The harness runs in the background so a TERM from Slurm (time limit,
# scancel) reaches the trap at once and is passed on.
# record_hardware: what the cell runs on, from the node (where the GPUs
# are): hardware.env and nvidia-smi -q -x, for its fingerprint. Nothing
# here fails the job.
record_hardware() {
	if {
		echo "node=$NODE_NAME"
		echo "kernel=$(uname -r 2>/dev/null)"
		echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
		echo "cpus=$(nproc 2>/dev/null)"
		# Set and empty (the local executor's task without GPUs): none.
		if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then echo "gpus_visible=$CUDA_VISIBLE_DEVICES"; fi
	} >"$CELL_DIR/.hardware.env.tmp" 2>/dev/null; then
		mv -f "$CELL_DIR/.hardware.env.tmp" "$CELL_DIR/hardware.env"
	else
		rm -f "$CELL_DIR/.hardware.env.tmp"
	fi
	if command -v nvidia-smi >/dev/null 2>&1 &&
		timeout 60 nvidia-smi -q -x >"$CELL_DIR/.nvidia-smi.xml.tmp" 2>/dev/null; then
		mv -f "$CELL_DIR/.nvidia-smi.xml.tmp" "$CELL_DIR/nvidia-smi.xml"
	else
		rm -f "$CELL_DIR/.nvidia-smi.xml.tmp"
	fi
}
# gpu_health before|after: the health counters of the job's GPUs on this
# node (kvsweep job health: nvidia-smi -q -x, nvidia-smi nvlink -e, the
# kernel log's Xid lines, none of another job's GPU) into health-before.json
# and health-after.json. After, a counter whose rise means the hardware
# failed under the cell (an Xid, an NVLink error, ...) goes to gpu-fault and
# a line of gpu-faults.jsonl: the attempt failed outside the test. Where the
# job has kvsweep; nothing here fails the job.
gpu_health() {
	local bin=${KVSWEEP_BIN:-$SWEEP_DIR/bin/kvsweep}
	local args=(--out "$CELL_DIR/health-$1.json" --node "${SLURMD_NODENAME:-$NODE_NAME}" --job "$JOB_ID" --gpus "${CUDA_VISIBLE_DEVICES:-}")
	if [ ! -x "$bin" ]; then return 0; fi
	if [ "$1" = after ]; then
		args+=(--before "$CELL_DIR/health-before.json" --fault "$CELL_DIR/gpu-fault" --log "$CELL_DIR/gpu-faults.jsonl")
	fi
	timeout 300 "$bin" job health "${args[@]}" >>"$CELL_DIR/health.log" 2>&1 || true
}
run_harness() {
	record_hardware
	gpu_health before
	launch head sh -c "$PROVENANCE" kvsweep-harness "$CELL_DIR" "${EXPECT[@]}" "$@" &
	CHILDREN+=("$!")
	local rc=0
	wait "$!" || rc=$?
	gpu_health after
	return "$rc"
}

# Sidecar: the aggregated workers, with their kvcr_service in containers
# of their own (a sidecar topology must have a service).
start_services head 0 1
run_harness "${ARGV[@]}"
