#!/usr/bin/env bash
# bench/gpu-overhead.sh [KVSWEEP]: what sampling the GPUs costs a workload
# on a real GPU host, and the real nvidia-smi's answer to kvsweep's query.
#
#   1. nvidia-smi's version, and its answer to the exact query kvsweep job
#      gpu-sample runs (gpustat.Command), with and without units: the
#      field names and units checked against the real tool.
#   2. A decode-like workload timed step by step ("inter-token latency"),
#      in one process: with PyTorch and CUDA, a chain of fp16 matrix
#      products over 1 GiB of weights a step (memory-bound, like a decode
#      step); without, a CPU-bound Python loop a step. Rounds alternate
#      sampling off and on (on: KVSWEEP job gpu-sample, given a kvsweep
#      binary, else the same nvidia-smi stream bare), at 2s (the default)
#      and 100ms (the most often kvsweep allows); each round's median
#      step, then the median of the rounds, and the ratio on/off.
#   3. The sampler's own CPU time per second of sampling.
#
# Needs nvidia-smi and python3 (torch if present); builds nothing. Writes
# everything to stdout, and to $OUT/gpu-overhead.txt when OUT is set. Run
# from the repository root:  bench/gpu-overhead.sh [path/to/kvsweep]
# (ROUNDS, default 8, and STEPS a round, default 400).
set -euo pipefail
kvsweep=${1:-}
if [ -n "$kvsweep" ]; then kvsweep=$(realpath "$kvsweep"); fi
ROUNDS=${ROUNDS:-8}
STEPS=${STEPS:-400}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
report=$work/report.txt
say() { echo "$*" | tee -a "$report"; }

query=index,uuid,power.draw,utilization.gpu,utilization.memory,memory.used,memory.total,clocks.current.sm,clocks.current.memory,temperature.gpu
say "## nvidia-smi"
{ nvidia-smi --version 2>&1 || true; } | tee -a "$report"
say "## the query with units (header: the field names as nvidia-smi prints them)"
{ nvidia-smi --query-gpu=$query --format=csv 2>&1 || true; } | tee -a "$report"
say "## the query as kvsweep runs it (noheader, nounits)"
{ nvidia-smi --query-gpu=$query --format=csv,noheader,nounits 2>&1 || true; } | tee -a "$report"
say "## three ticks of the stream at 100ms"
{ timeout 1 nvidia-smi --query-gpu=$query --format=csv,noheader,nounits -lms 100 2>&1 || true; } | head -n 6 | tee -a "$report"
if [ -n "$kvsweep" ]; then
	say "## kvsweep job gpu-sample, 1s at 200ms"
	timeout -s TERM 1 "$kvsweep" job gpu-sample --interval 200ms --out "$work/gpu.jsonl" || true
	head -n 4 "$work/gpu.jsonl" | tee -a "$report"
	argv=("$kvsweep" job gpu-sample --interval "{ms}ms" --out "$work/on.jsonl")
else
	# shellcheck disable=SC2054 # the commas are the query's
	argv=(nvidia-smi "--query-gpu=$query" --format=csv,noheader,nounits -lms "{ms}")
fi

# load.py ROUNDS STEPS INTERVAL_MS SAMPLER_ARGV...: the workload in one
# process (CUDA set up once), rounds alternating sampling off and on
# (SAMPLER_ARGV with {ms} replaced, started before an "on" round and
# stopped after it); prints each mode's median of the round medians.
cat >"$work/load.py" <<'PY'
import statistics, subprocess, sys, time
rounds, steps, ms, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
try:
    import torch
    assert torch.cuda.is_available()
    dev = torch.device("cuda")
    ws = [torch.randn(4096, 4096, dtype=torch.float16, device=dev) for _ in range(32)]
    x = torch.randn(8, 4096, dtype=torch.float16, device=dev)
    def step():
        y = x
        for w in ws:
            y = (y @ w).clamp_(-1, 1)
        torch.cuda.synchronize()
    kind = "torch %s on %s" % (torch.__version__, torch.cuda.get_device_name(0))
except Exception as e:  # no torch or no CUDA: a CPU-bound step
    def step():
        s = 0
        for i in range(60000):
            s += i * i
    kind = "CPU loop (no torch with CUDA: %s)" % type(e).__name__
for _ in range(50):
    step()
def round_median():
    ts = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
med = {"off": [], "on": []}
for r in range(rounds):
    med["off"].append(round_median())
    p = subprocess.Popen([a.replace("{ms}", ms) for a in argv], stdout=subprocess.DEVNULL)
    time.sleep(1)  # the stream has started
    med["on"].append(round_median())
    p.terminate()
    p.wait()
off, on = statistics.median(med["off"]), statistics.median(med["on"])
print("workload: %s; %d rounds of %d steps each way" % (kind, rounds, steps))
print("interval %5sms: median step off %.4f ms (rounds %.4f to %.4f), on %.4f ms (rounds %.4f to %.4f), on/off %.4f (%+.2f%%)" % (
    ms, off * 1e3, min(med["off"]) * 1e3, max(med["off"]) * 1e3, on * 1e3, min(med["on"]) * 1e3, max(med["on"]) * 1e3, on / off, (on / off - 1) * 100))
PY
say "## the workload's steps, sampling off and on alternating; sampler: ${argv[*]}"
for iv in 2000 100; do
	python3 "$work/load.py" "$ROUNDS" "$STEPS" "$iv" "${argv[@]}" | tee -a "$report"
done

# cputicks PID: the CPU ticks of PID and its children so far.
cputicks() {
	local t=0 c
	for c in "$1" $(pgrep -P "$1" || true); do
		t=$((t + $(awk '{print $14+$15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
say "## the sampler's own CPU time, 20s of sampling"
for iv in 2000 100; do
	"${argv[@]/\{ms\}/$iv}" >/dev/null &
	p=$!
	pids+=("$p")
	sleep 1 # the stream has started
	t0=$(cputicks "$p")
	sleep 20
	t1=$(cputicks "$p")
	{ kill "$p"; wait "$p" 2>/dev/null; } || true
	tck=$(getconf CLK_TCK)
	say "$(awk -v iv="$iv" -v d="$((t1 - t0))" -v hz="$tck" 'BEGIN {printf "interval %5dms: %.4f CPU seconds a second (%.2f%% of one core), the sampler and its nvidia-smi", iv, d/hz/20, d/hz/20*100}')"
done
if [ -n "${OUT:-}" ]; then cp "$report" "$OUT/gpu-overhead.txt"; fi
