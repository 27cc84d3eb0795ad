#!/usr/bin/env python3
"""Write every cell's result.json of a rendered sweep with the simulated
harness, in one process (one harness process per cell would spend minutes
starting Python). Usage: gen_results.py SWEEP_DIR"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "harness"))
import phase1_sim  # noqa: E402

sweep = os.path.abspath(sys.argv[1])
with open(os.path.join(sweep, "manifest.json")) as f:
    manifest = json.load(f)
for cell in manifest["cells"]:
    cell_dir = os.path.join(sweep, cell["dir"])
    argv = [a.replace("@CELL_DIR@", cell_dir) for a in cell["argv"][2:]]  # drop python3 and the script
    env = {"KVSWEEP_CELL_ID": cell["id"], "KVSWEEP_SWEEP_ID": manifest["sweep_id"]}
    phase1_sim.main(argv, env)
