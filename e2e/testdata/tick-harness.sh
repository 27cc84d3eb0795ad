#!/bin/bash
# A harness that prints a line a second for N seconds: kvsweep watch's
# e2e test follows its log tail. Usage: tick-harness.sh N
set -euo pipefail
n=$1
for ((i = 1; i <= n; i++)); do
	echo "tick $i of $n"
	sleep 1
done
