#!/usr/bin/env python3
"""The smallest harness that speaks kvsweep's result.json v1.

kvsweep runs the harness with the cell directory in --results-dir (and in
$KVSWEEP_CELL_DIR), the cell id in $KVSWEEP_CELL_ID and the cell's planned
cases in --cases (comma-separated: TC-01,TC-02,TC-03). The harness writes
result.json there: one entry per planned case, under the id --cases gives,
with its verdict and metrics. A planned case the result leaves out is
NOT_REPORTED and a case nobody planned is UNPLANNED, and both fail the
cell. Write it to a temporary name and rename it, so kvsweep never reads
half a file. Exit 0 when no case failed (every verdict PASS or SKIP), 1
when one did (FAIL or ERROR): a non-zero exit with no failed case is
HARNESS_FAILED.
"""
import json
import os
import sys


def flag(name, default):
    """The value after flag name in argv, or default."""
    if name in sys.argv[1:-1]:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def run_case(case_id):
    """Runs one case; here, one that passes with two measured figures."""
    return {
        "id": case_id,  # exactly as --cases gives it
        "verdict": "PASS",  # PASS, FAIL, SKIP or ERROR
        "duration_s": 12.5,
        "metrics": {
            "ttft_ms": {"value": 183.7, "unit": "ms", "direction": "lower"},
            "throughput_tok_s": {"value": 2416.5, "unit": "tok/s", "direction": "higher"},
        },
    }


def main():
    cell_dir = flag("--results-dir", os.environ.get("KVSWEEP_CELL_DIR", "."))
    planned = [c for c in flag("--cases", "TC-01").split(",") if c]
    cases = [run_case(case_id) for case_id in planned]
    result = {"schema_version": 1, "cell_id": os.environ["KVSWEEP_CELL_ID"],
              "sweep_id": os.environ.get("KVSWEEP_SWEEP_ID", ""), "cases": cases}
    tmp = os.path.join(cell_dir, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, os.path.join(cell_dir, "result.json"))
    return 1 if any(c["verdict"] in ("FAIL", "ERROR") for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
