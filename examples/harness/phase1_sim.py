#!/usr/bin/env python3
"""SIMULATED Phase 1 harness, for kvsweep demos and tests. It runs no model.

It accepts the real harness's command line (tests/e2e/phase1: --engine,
--topology, --cases, --gpus, --gpu-memory-utilization, --results-dir,
--external-services, --remote-worker, --etcd and free geometry flags) and
writes a result.json (schema v1, docs/results.md) with plausible,
deterministic figures: the same cell, case and --sim-seed give the same
numbers.

Failure modes, chosen with --sim MODE (empty or "pass" means pass):
  fail-case:TC-04   that case's verdict is FAIL; exit 1
  exit:N            write the result, then exit with status N
  sleep:S           sleep S seconds first (to run past a time limit)
  garbage           write a result.json that is not JSON
  no-result         write nothing; exit 0
  slow:F            multiply time metrics by F (a regressed candidate)
"""
import argparse
import hashlib
import json
import os
import random
import socket
import sys
import time

# Metrics the real harness reports per case: name -> (unit, direction, typical value).
METRICS = {
    "TC-01": {"ttft_ms": ("ms", "lower", 180.0), "throughput_tok_s": ("tok/s", "higher", 2400.0)},
    "TC-02": {"dram_hit_rate": ("ratio", "higher", 0.92), "ttft_ms": ("ms", "lower", 95.0)},
    "TC-03": {"peer_transfer_gib_s": ("GiB/s", "higher", 18.0), "ttft_ms": ("ms", "lower", 120.0)},
    "TC-04": {"guard_promoted_s": ("s", "lower", 1.0), "replacement_serving_s": ("s", "lower", 82.0)},
    "TC-05": {"ttft_ms": ("ms", "lower", 140.0), "throughput_tok_s": ("tok/s", "higher", 3100.0)},
    "TC-06": {"guard_promoted_s": ("s", "lower", 1.0), "first_correct_response_s": ("s", "lower", 1.4)},
}


def parse(argv=None):
    p = argparse.ArgumentParser(description="SIMULATED Phase 1 harness (no model is run)")
    p.add_argument("--engine", default="vllm", choices=["vllm", "sglang"])
    p.add_argument("--topology", default="aggregated")
    p.add_argument("--cases", default="TC-01")
    p.add_argument("--results-dir", required=True)
    p.add_argument("--gpus")
    p.add_argument("--gpu-memory-utilization")
    p.add_argument("--external-services")
    p.add_argument("--remote-worker", action="append", default=[])
    p.add_argument("--etcd", nargs="?", const="")
    p.add_argument("--sim", default="")
    p.add_argument("--sim-seed", default="0")
    args, geometry = p.parse_known_args(argv)
    return args, geometry


def main(argv=None, env=None):
    """Run the simulator on argv (default: sys.argv) with env (default: os.environ)."""
    env = os.environ if env is None else env
    args, geometry = parse(argv)
    mode, _, arg = args.sim.partition(":")
    if mode not in ("", "pass", "fail-case", "exit", "sleep", "garbage", "no-result", "slow"):
        print(f"phase1-sim: unknown --sim mode {args.sim!r}", file=sys.stderr)
        return 2
    if mode == "sleep":
        time.sleep(float(arg))
    os.makedirs(args.results_dir, exist_ok=True)
    out = os.path.join(args.results_dir, "result.json")
    if mode == "no-result":
        print("phase1-sim: writing no result, as asked")
        return 0
    if mode == "garbage":
        with open(out, "w") as f:
            f.write('{"schema_version": 1, "cases": [ this is not json')
        return 0
    slow = float(arg) if mode == "slow" else 1.0
    cell = env.get("KVSWEEP_CELL_ID", "local")
    started = time.time()
    cases = []
    failed = False
    for case in [c for c in args.cases.split(",") if c]:
        seed = hashlib.sha256(f"{cell}/{case}/{args.sim_seed}".encode()).hexdigest()
        rng = random.Random(seed)
        metrics = {}
        for name, (unit, direction, typical) in METRICS.get(case, {}).items():
            value = typical * rng.uniform(0.95, 1.05)
            if unit in ("s", "ms") and slow != 1.0:
                value *= slow
            metrics[name] = {"value": round(value, 4), "unit": unit, "direction": direction}
        verdict, message = "PASS", "simulated"
        if mode == "fail-case" and arg == case:
            verdict, message, failed = "FAIL", "simulated failure", True
        cases.append({"id": case, "verdict": verdict, "duration_s": round(rng.uniform(5, 60), 3),
                      "message": message, "metrics": metrics})
        if env is os.environ:
            print(f"phase1-sim: {case} {verdict}")
    result = {
        "schema_version": 1,
        "sweep_id": env.get("KVSWEEP_SWEEP_ID", ""),
        "cell_id": cell,
        "params": {"engine": args.engine, "topology": args.topology, "gpus": args.gpus or "",
                   "geometry": " ".join(geometry)},
        "slurm": {
            "job_id": env.get("SLURM_JOB_ID", ""),
            "array_job_id": env.get("SLURM_ARRAY_JOB_ID", ""),
            "array_task_id": env.get("SLURM_ARRAY_TASK_ID", ""),
            "nodes": env.get("SLURM_JOB_NODELIST", socket.gethostname()),
            "partition": env.get("SLURM_JOB_PARTITION", ""),
        },
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cases": cases,
        "evidence": [],
    }
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=2)
    os.replace(tmp, out)
    if mode == "exit":
        return int(arg)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
