#!/bin/sh
# The smallest harness in shell that speaks kvsweep's result.json v1: one
# case, its verdict and one metric, written to a temporary name and renamed
# into the cell directory ($KVSWEEP_CELL_DIR) so kvsweep never reads half a
# file. It reports TC-01 alone, so it suits a cell that plans TC-01 alone: a
# planned case it does not report is NOT_REPORTED, and fails the cell
# (write_result.py reports every case of --cases).
set -eu
verdict=PASS ttft_ms=183.7
tmp=$KVSWEEP_CELL_DIR/result.json.tmp
printf '{"schema_version": 1, "cell_id": "%s", "cases": [{"id": "TC-01", "verdict": "%s", "metrics": {"ttft_ms": {"value": %s, "unit": "ms", "direction": "lower"}}}]}\n' \
	"$KVSWEEP_CELL_ID" "$verdict" "$ttft_ms" >"$tmp"
mv "$tmp" "$KVSWEEP_CELL_DIR/result.json"
