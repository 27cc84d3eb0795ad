#!/usr/bin/env bash
# bench/quickstart-platforms.sh [RUNS]: what emulation costs a build of the
# shipped quick-start Dockerfile. Runs the e2e benchmark
# BenchmarkQuickStartPlatforms: from the quick-start stand-ins (Debian's
# packages served on loopback, a Debian base of each architecture, Dynamo
# with a Rust extension), kvsweep image build on a fresh buildkitd each
# time, RUNS times (default 3) each: linux/amd64 alone, then linux/amd64
# with linux/arm64 (the arm64 RUN steps under QEMU). Prints the median of
# each and their ratio.
#
# Needs the test services, as the README's test command starts them:
#   scripts/slurm-env.sh start
#   scripts/buildkit-env.sh install; scripts/buildkit-env.sh start
#   eval "$(scripts/slurm-env.sh env)"; eval "$(scripts/buildkit-env.sh env)"
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
: "${KVSWEEP_QS_BASE_ARM64:?start the test services: see the head of this script}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '^BenchmarkQuickStartPlatforms$' -benchtime 1x -count "$runs" -timeout 60m ./e2e/ | tee "$out" >&2
# med NAME UNIT: the median of NAME's values in UNIT (ns/op as seconds).
med() {
	awk -v n="$1" -v u="$2" '$1 ~ "^BenchmarkQuickStartPlatforms/"n"(-[0-9]+)?$" {
		for (i = 3; i < NF; i++) if ($(i + 1) == u) print (u == "ns/op") ? $i / 1e9 : $i
	}' "$out" | sort -n |
		awk '{a[NR] = $1} END {if (NR == 0) {print "-"; exit} printf "%.1f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.1fx", b / a; else print "-"}'; }
amd64=$(med linux-amd64 ns/op)
both=$(med linux-amd64,linux-arm64 ns/op)
cargo_alone=$(med linux-amd64 s-maturin-amd64)
cargo_amd64=$(med linux-amd64,linux-arm64 s-maturin-amd64)
cargo_arm64=$(med linux-amd64,linux-arm64 s-maturin-arm64)
echo "quick-start image build on a fresh buildkitd, median of $runs ($(nproc) cores):"
echo "  linux/amd64 alone:                      ${amd64} s"
echo "  linux/amd64 and linux/arm64 (QEMU):     ${both} s ($(ratio "$amd64" "$both"))"
echo "  the maturin/cargo step:"
echo "    amd64 alone:                          ${cargo_alone} s"
echo "    amd64 beside arm64:                   ${cargo_amd64} s"
echo "    arm64 under QEMU:                     ${cargo_arm64} s ($(ratio "$cargo_amd64" "$cargo_arm64") of amd64 beside it, $(ratio "$cargo_alone" "$cargo_arm64") of amd64 alone)"
