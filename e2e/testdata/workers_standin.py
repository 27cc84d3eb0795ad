#!/usr/bin/env python3
"""A stand-in for a 2P+1D cell: three vLLM workers (two prefill, one
decode), each a server of vLLM v1's /metrics families on a loopback port
of its own, listed in CELL_DIR/telemetry-endpoints with role= and name=,
and the harness that runs two cases against them, marking each case's
window in CELL_DIR/case-windows.jsonl itself.

    workers_standin.py --results-dir CELL_DIR [--cases TC-01,TC-02]

Every scrape of a worker, it has served 1000 more prompt tokens, of which
a share, set per worker and per case (HITS below), were prefix-cache hits;
prefill-0 has a KV connector whose external counters move too. A case
runs until the scraper has read every worker 3 times inside its window;
after its end line the harness waits for 2 more reads of each (so the
first sample at or after the end still has the case's shares) before the
next case starts. Then result.json v1 reports the cases.
"""
import http.server
import json
import os
import sys
import threading
import time

HITS = {  # worker -> case -> (local share, connector share)
    "prefill-0": {"TC-01": (0.9, 0.6), "TC-02": (0.5, 0.2)},
    "prefill-1": {"TC-01": (0.7, 0.0), "TC-02": (0.3, 0.0)},
    "decode-0": {"TC-01": (0.1, 0.0), "TC-02": (0.0, 0.0)},
}
ROLES = {"prefill-0": "prefill", "prefill-1": "prefill", "decode-0": "decode"}

lock = threading.Lock()
current = {"case": "TC-01"}


class Worker:
    def __init__(self, name):
        self.name = name
        self.scrapes = 0
        self.c = {"q": 0.0, "h": 0.0, "xq": 0.0, "xh": 0.0}

    def metrics(self):
        with lock:
            local, ext = HITS[self.name][current["case"]]
            self.c["q"] += 1000
            self.c["h"] += 1000 * local
            if self.name == "prefill-0":
                self.c["xq"] += 1000
                self.c["xh"] += 1000 * ext
            self.scrapes += 1
            c = dict(self.c)
        lab = 'engine="0",model_name="m"'
        out = []
        for fam, key in (("vllm:prefix_cache_queries_total", "q"), ("vllm:prefix_cache_hits_total", "h"),
                         ("vllm:external_prefix_cache_queries_total", "xq"), ("vllm:external_prefix_cache_hits_total", "xh")):
            out.append(f"# TYPE {fam} counter\n{fam}{{{lab}}} {c[key]}\n")
        out.append(f"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{{lab}}} 0.25\n")
        out.append(f"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{{{lab}}} 0.0\n")
        return "".join(out).encode()


def serve(w):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/metrics":
                self.send_error(404)
                return
            body = w.metrics()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


def wait_reads(workers, n):
    with lock:
        base = {w.name: w.scrapes for w in workers}
    deadline = time.time() + 300
    while time.time() < deadline:
        with lock:
            if all(w.scrapes >= base[w.name] + n for w in workers):
                return
        time.sleep(0.05)
    sys.exit("workers_standin: the scraper did not read every worker in 5 minutes")


def mark(cell, case, event):
    with open(os.path.join(cell, "case-windows.jsonl"), "a") as f:
        f.write(json.dumps({"case": case, "event": event, "t": int(time.time() * 1000)}) + "\n")


def main(argv):
    cell, cases = os.environ.get("KVSWEEP_CELL_DIR", ""), "TC-01,TC-02"
    while argv:
        if argv[0] == "--results-dir":
            cell, argv = argv[1], argv[2:]
        elif argv[0] == "--cases":
            cases, argv = argv[1], argv[2:]
        else:
            argv = argv[1:]
    workers = [Worker(n) for n in HITS]
    lines = [f"http://127.0.0.1:{serve(w)}/metrics role={ROLES[w.name]} name={w.name}" for w in workers]
    with open(os.path.join(cell, "telemetry-endpoints.tmp"), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(os.path.join(cell, "telemetry-endpoints.tmp"), os.path.join(cell, "telemetry-endpoints"))
    wait_reads(workers, 2)
    ids = cases.split(",")
    for case in ids:
        with lock:
            current["case"] = case
        mark(cell, case, "start")
        wait_reads(workers, 3)
        mark(cell, case, "end")
        wait_reads(workers, 2)
    result = {"schema_version": 1, "sweep_id": os.environ.get("KVSWEEP_SWEEP_ID", ""), "cell_id": os.environ.get("KVSWEEP_CELL_ID", ""),
              "cases": [{"id": c, "verdict": "PASS"} for c in ids]}
    with open(os.path.join(cell, "result.json.tmp"), "w") as f:
        json.dump(result, f)
    os.rename(os.path.join(cell, "result.json.tmp"), os.path.join(cell, "result.json"))


main(sys.argv[1:])
