#!/usr/bin/env python3
"""The same join as kvsweep collect + report, in Python 3, for
bench/collect.sh to compare against: read the manifest, read and check each
cell's result.json, and print the cells x cases verdict table and a metrics
table as markdown. Standard library only, unless --schema FILE is given:
then each result is validated against that JSON Schema with Debian's
python3-jsonschema, as kvsweep does. With --rows it prints, instead of the
tables, one line per cell, case and metric (CELL CASE VERDICT METRIC VALUE,
sorted) for comparing with kvsweep's answer. Usage: collect_py.py [--rows]
[--schema FILE] SWEEP_DIR"""
import json
import os
import sys

validator = None
rows_only = sys.argv[1] == "--rows"
if rows_only:
    del sys.argv[1]
if sys.argv[1] == "--schema":
    import jsonschema  # python3-jsonschema

    with open(sys.argv[2]) as f:
        validator = jsonschema.Draft202012Validator(json.load(f), format_checker=jsonschema.FormatChecker())
    del sys.argv[1:3]

VERDICTS = {"PASS", "FAIL", "SKIP", "ERROR"}
sweep = sys.argv[1]
with open(os.path.join(sweep, "manifest.json")) as f:
    manifest = json.load(f)
cases = sorted({c for cell in manifest["cells"] for c in cell["cases"]})
rows, metrics, counts = [], [], {}
for cell in manifest["cells"]:
    path = os.path.join(sweep, cell["dir"], "result.json")
    outcome, verdicts = "OK", {}
    try:
        if os.path.getsize(path) > 16 << 20:
            raise ValueError("too large")
        with open(path) as f:
            res = json.load(f)
        if validator is not None and not validator.is_valid(res):
            raise ValueError("invalid")
        if res.get("schema_version") != 1 or res.get("cell_id") != cell["id"] or not isinstance(res.get("cases"), list):
            raise ValueError("bad result")
        for c in res["cases"]:
            if c.get("verdict") not in VERDICTS:
                raise ValueError("bad verdict")
            verdicts[c["id"]] = c["verdict"]
            for name, m in sorted(c.get("metrics", {}).items()):
                metrics.append((cell["name"], c["id"], name, m["value"], m.get("unit", "")))
            if not c.get("metrics"):
                metrics.append((cell["name"], c["id"], "", None, ""))
    except FileNotFoundError:
        outcome = "MISSING"
    except (ValueError, KeyError, TypeError):
        outcome = "INVALID"
    counts[outcome] = counts.get(outcome, 0) + 1
    rows.append([cell["name"], outcome] + [verdicts.get(c, "MISSING" if c in cell["cases"] else "-") for c in cases])
if rows_only:
    # What the table says, one line per cell, case and metric, for
    # bench/collect.sh to hold kvsweep's answer to: CELL CASE VERDICT METRIC VALUE.
    verdict = {(r[0], c): v for r in rows for c, v in zip(cases, r[2:])}
    lines = [f"{a}\t{b}\t{verdict[(a, b)]}\t{c}\t{'' if d is None else format(d, 'g')}" for a, b, c, d, e in metrics]
    sys.stdout.write("\n".join(sorted(lines)) + "\n")
    sys.exit(0)
out = [f"## Sweep {manifest['sweep_id']}", "", ", ".join(f"{n} {o}" for o, n in counts.items()), ""]
out.append("| " + " | ".join(["cell", "outcome"] + cases) + " |")
out.append("|" + "---|" * (len(cases) + 2))
out += ["| " + " | ".join(r) + " |" for r in rows]
out += ["", "| cell | case | metric | value | unit |", "|---|---|---|---|---|"]
out += [f"| {a} | {b} | {c} | {d:g} | {e} |" for a, b, c, d, e in metrics if d is not None]
sys.stdout.write("\n".join(out) + "\n")
