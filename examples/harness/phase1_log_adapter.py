#!/usr/bin/env python3
"""Result adapter for a Phase 1 harness that writes only its log.

kvsweep runs it after the harness (harness.result_adapter in the spec), in
the same container, with the cell directory as its last argument:

    phase1_log_adapter.py [--log FILE]... CELL_DIR

It reads the harness's log (by default the job output, CELL_DIR/slurm-*.out)
and writes CELL_DIR/result.json (schema version 1). What it reads:

    TC-04 PASS                       a verdict (PASS, FAIL, SKIP, ERROR), also
    [TC-04]: FAIL replacement slow   as "[TC-04]" or "TC-04:", a message after it
    TC-04 Guard promoted 1.0 s, first correct response 1.4 s, replacement serving 82 s
    TC-06 5/5 Guard hits

A line that starts with a case id makes it the current case; the figures
on that line and on the indented lines right after it belong to it (any
other line ends the case's lines): guard_promoted_s,
first_correct_response_s, replacement_serving_s (seconds, lower is
better), guard_hits and guard_checks. Any other line is noise. A figure
that is missing is left out, never made zero; one that is not a finite
number stops the adapter (exit 2) with the line and the value, and kvsweep
then makes the cell INVALID naming this adapter.
"""
import glob
import json
import math
import os
import re
import sys

CASE = re.compile(r"^\s*\[?(TC-\d+)\]?:?(?=\s|$)")
VERDICT = re.compile(r"^\s*\[?(TC-\d+)\]?:?\s+(PASS|FAIL|SKIP|ERROR)\b[\s:,-]*(.*)$")
FIGURES = [
    (re.compile(r"guard promoted\s+(\S+?)\s*s\b", re.I), "guard_promoted_s"),
    (re.compile(r"first correct response\s+(\S+?)\s*s\b", re.I), "first_correct_response_s"),
    (re.compile(r"replacement serving\s+(\S+?)\s*s\b", re.I), "replacement_serving_s"),
]
HITS = re.compile(r"(\S+)\s*/\s*(\S+)\s+guard hits", re.I)


class BadFigure(Exception):
    pass


def number(text, what, lineno):
    try:
        v = float(text.rstrip(","))
    except ValueError:
        raise BadFigure(f"line {lineno}: {what}: {text!r} is not a number")
    if math.isinf(v) or math.isnan(v):
        raise BadFigure(f"line {lineno}: {what}: {text!r} is not a finite number")
    return v


def parse(lines):
    """Returns {case: {"verdict", "message", "metrics"}} in the order seen."""
    cases = {}
    current = None
    for lineno, line in enumerate(lines, 1):
        m = CASE.match(line)
        if m:
            current = cases.setdefault(m.group(1), {"verdict": None, "message": "", "metrics": {}})
        elif not line[:1].isspace():
            current = None  # an unindented line of another kind: noise
        v = VERDICT.match(line)
        if v:
            current["verdict"] = v.group(2)
            current["message"] = v.group(3).strip()
        if current is None:
            continue
        for rx, name in FIGURES:
            f = rx.search(line)
            if f:
                current["metrics"][name] = {"value": number(f.group(1), name, lineno), "unit": "s", "direction": "lower"}
        h = HITS.search(line)
        if h:
            hits = number(h.group(1), "Guard hits", lineno)
            total = number(h.group(2), "Guard checks", lineno)
            current["metrics"]["guard_hits"] = {"value": hits, "direction": "higher"}
            current["metrics"]["guard_checks"] = {"value": total}
    return cases


def main(argv):
    logs, args = [], list(argv)
    while args and args[0] == "--log":
        logs.append(args[1])
        args = args[2:]
    if len(args) != 1:
        print("usage: phase1_log_adapter.py [--log FILE]... CELL_DIR", file=sys.stderr)
        return 2
    cell_dir = args[0]
    if not logs:
        logs = sorted(glob.glob(os.path.join(cell_dir, "slurm-*.out")))
    lines = []
    for path in logs:
        with open(path, errors="replace") as f:
            lines.extend(f.read().splitlines())
    try:
        cases = parse(lines)
    except BadFigure as e:
        print(f"phase1_log_adapter: {e}", file=sys.stderr)
        return 2
    result = {
        "schema_version": 1,
        "cell_id": os.environ.get("KVSWEEP_CELL_ID") or os.path.basename(os.path.normpath(cell_dir)),
        "sweep_id": os.environ.get("KVSWEEP_SWEEP_ID", ""),
        "cases": [],
    }
    for cid, c in cases.items():
        if c["verdict"] is None:
            continue  # figures without a verdict: the case is not reported
        case = {"id": cid, "verdict": c["verdict"]}
        if c["message"]:
            case["message"] = c["message"]
        if c["metrics"]:
            case["metrics"] = c["metrics"]
        result["cases"].append(case)
    tmp = os.path.join(cell_dir, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(cell_dir, "result.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
