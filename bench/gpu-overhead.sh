#!/usr/bin/env bash
# bench/gpu-overhead.sh [KVSWEEP]: what sampling the GPUs costs a workload
# on a real GPU host, and the real nvidia-smi's answer to kvsweep's query.
#
#   1. nvidia-smi's version, and its answer to the exact query kvsweep job
#      gpu-sample runs (gpustat.Command), with and without units: the
#      field names and units checked against the real tool.
#   2. A decode-like workload timed step by step ("inter-token latency"):
#      with PyTorch and CUDA, a chain of fp16 matrix-vector products over
#      1 GiB of weights a step (memory-bound, like a decode step); without,
#      a CPU-bound Python loop a step. Rounds alternate sampling off and
#      on (on: KVSWEEP job gpu-sample, given a kvsweep binary, else the
#      same nvidia-smi stream bare), at 2s (the default) and 100ms (the
#      most often kvsweep allows); each round's median step, then the
#      median of the rounds, and the ratio on/off.
#   3. The sampler's own CPU time per second of sampling.
#
# Needs nvidia-smi and python3 (torch if present). Writes everything to
# stdout, and to $OUT/gpu-overhead.txt when OUT is set. Run from the
# repository root:  bench/gpu-overhead.sh [bin/kvsweep]
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
fi

cat >"$work/load.py" <<'EOF'
import statistics, sys, time
steps = int(sys.argv[1])
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
for _ in range(20):
    step()
ts = []
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    ts.append(time.perf_counter() - t0)
print("%.9f %s" % (statistics.median(ts), kind))
EOF

# sampler INTERVAL_MS: starts the sampling of "on" rounds in the background.
sampler() {
	if [ -n "$kvsweep" ]; then
		"$kvsweep" job gpu-sample --interval "${1}ms" --out "$work/on.jsonl" &
	else
		nvidia-smi --query-gpu=$query --format=csv,noheader,nounits -lms "$1" >"$work/on.csv" &
	fi
	pids+=("$!")
	sleep 1 # the stream has started
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

say "## workload: $(python3 "$work/load.py" 5 | cut -d' ' -f2-)"
say "## rounds of $STEPS steps, alternating off/on ($ROUNDS each), sampler: ${kvsweep:+kvsweep job gpu-sample via }nvidia-smi"
for iv in 2000 100; do
	: >"$work/off" && : >"$work/on"
	for _ in $(seq "$ROUNDS"); do
		python3 "$work/load.py" "$STEPS" | cut -d' ' -f1 >>"$work/off"
		sampler "$iv"
		python3 "$work/load.py" "$STEPS" | cut -d' ' -f1 >>"$work/on"
		{ kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null; } || true
	done
	off=$(median <"$work/off")
	on=$(median <"$work/on")
	say "$(awk -v iv="$iv" -v a="$off" -v b="$on" 'BEGIN {printf "interval %5dms: median step off %.4f ms, on %.4f ms, on/off %.4f (%+.2f%%)", iv, a*1e3, b*1e3, b/a, (b/a-1)*100}')"
done

say "## the sampler's own CPU time, 20s of sampling"
# cputicks PID: the CPU ticks of PID and its children so far.
cputicks() {
	local t=0 c
	for c in "$1" $(pgrep -P "$1" || true); do
		t=$((t + $(awk '{print $14+$15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
for iv in 2000 100; do
	sampler "$iv"
	p=${pids[-1]}
	t0=$(cputicks "$p")
	sleep 20
	t1=$(cputicks "$p")
	{ kill "$p"; wait "$p" 2>/dev/null; } || true
	tck=$(getconf CLK_TCK)
	say "$(awk -v iv="$iv" -v d="$((t1 - t0))" -v hz="$tck" 'BEGIN {printf "interval %5dms: %.4f CPU seconds a second (%.2f%% of one core), the sampler and its nvidia-smi", iv, d/hz/20, d/hz/20*100}')"
done
if [ -n "${OUT:-}" ]; then cp "$report" "$OUT/gpu-overhead.txt"; fi
