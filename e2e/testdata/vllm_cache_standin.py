#!/usr/bin/env python3
"""A stand-in for a vLLM server with a prefix cache, as vLLM v1 exposes it
(the families, types and labels of v0.20.1's PrometheusStatLogger):

    vllm_cache_standin.py [--port PORT] [--fail-reset] [--block N]
                          [--gpu-blocks N] [--tier] CELL_DIR

POST /v1/completions {"prompt": "w1 w2 ..."} counts the prompt's words as
tokens in blocks of N (default 16); a block whose prefix was seen before
is a hit. The GPU holds --gpu-blocks blocks (default 4096), the least
recently used evicted first. With --tier a KV connector's tier keeps every
block behind it: the blocks after the GPU's hits that the tier holds are
loaded from it, counted as vLLM counts a connector's
(vllm/v1/core/sched/scheduler.py at v0.20.1, lines 638-641 and 790: the
queries are the prompt's tokens the GPU did not hit, the hits the tokens
the connector matched; nothing is counted when the GPU hit them all), and
cost a tenth of a computed token's time. The cache persists across requests until
POST /reset_prefix_cache, which, like vLLM, answers 200 with an empty body
(500 with --fail-reset) and exists only when VLLM_SERVER_DEV_MODE=1 (404
otherwise); like vLLM it does nothing while a request runs, and it clears
the tier only with ?reset_external=true (a connector that implements
reset_cache). Hits and
queries are counted in vllm:prefix_cache_hits_total and
vllm:prefix_cache_queries_total; a computed token costs time and a cached
one does not, so a warm cache answers faster (vllm-project/vllm #52884).
It listens on PORT (default: a free loopback port), writes the port to
CELL_DIR/port, and answers /health.

With --profiler-config JSON (vLLM's flag, vllm/engine/arg_utils.py at
v0.20.1) whose "profiler" is "torch" or "cuda", POST /start_profile and
POST /stop_profile exist, as vLLM registers them only then
(vllm/entrypoints/serve/profile/api_router.py attach_router), and answer
200 with an empty body; without it they answer 404 {"detail":"Not Found"}.
"torch" needs "torch_profiler_dir" (vllm/config/profiler.py refuses it
otherwise) and /stop_profile writes a gzipped Chrome trace of the window
there, named as torch's tensorboard_trace_handler names one
(WORKER.TIME_NS.pt.trace.json.gz); "cuda" writes nothing (nsys, through
cudaProfilerStart/Stop, does).
"""
import collections
import gzip
import hashlib
import http.server
import json
import os
import sys
import threading
import time

args = sys.argv[1:]
port, fail_reset, block, gpu_blocks, tier_on = 0, False, 16, 4096, False
profiler = {}
while args and args[0].startswith("--"):
    if args[0] == "--port":
        port, args = int(args[1]), args[2:]
    elif args[0] == "--fail-reset":
        fail_reset, args = True, args[1:]
    elif args[0] == "--block":
        block, args = int(args[1]), args[2:]
    elif args[0] == "--gpu-blocks":
        gpu_blocks, args = int(args[1]), args[2:]
    elif args[0] == "--tier":
        tier_on, args = True, args[1:]
    elif args[0] == "--profiler-config":
        profiler, args = json.loads(args[1]), args[2:]
        if profiler.get("profiler") == "torch" and not profiler.get("torch_profiler_dir"):
            sys.exit("torch_profiler_dir must be set when profiler is 'torch'")
    else:
        sys.exit(f"unknown flag {args[0]}")
cell = args[0]
dev_mode = os.environ.get("VLLM_SERVER_DEV_MODE", "0") not in ("", "0", "false", "False")
lock = threading.Lock()
cache = collections.OrderedDict()  # the GPU's blocks, least recently used first
tier = set()
state = {"queries": 0.0, "hits": 0.0, "ext_queries": 0.0, "ext_hits": 0.0,
         "prompt": 0.0, "gen": 0.0, "running": 0, "waiting": 0, "resets": 0}
LABELS = 'model_name="stand-in",engine="0"'


def complete(prompt):
    words = prompt.split()
    hashes, h = [], b""
    for i in range(0, len(words) - len(words) % block, block):
        h = hashlib.sha256(h + " ".join(words[i:i + block]).encode()).digest()
        hashes.append(h)
    with lock:
        hit = 0
        while hit < len(hashes) and hashes[hit] in cache:
            hit += 1
        ext = hit
        while tier_on and ext < len(hashes) and hashes[ext] in tier:
            ext += 1
        cached, loaded = hit * block, (ext - hit) * block
        state["queries"] += len(words)
        state["hits"] += cached
        if tier_on and len(words) > cached:
            state["ext_queries"] += len(words) - cached
            state["ext_hits"] += loaded
        state["prompt"] += len(words)
        state["gen"] += 1
        for h in hashes:
            cache[h] = True
            cache.move_to_end(h)
        while len(cache) > gpu_blocks:
            cache.popitem(last=False)
        if tier_on:
            tier.update(hashes)
    time.sleep(0.0005 * (len(words) - cached - loaded) + 0.00005 * loaded)
    return cached + loaded, len(words)


def metrics():
    with lock:
        s = dict(state)
        usage = min(1.0, len(cache) / gpu_blocks)
    fams = [
        ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", s["running"]),
        ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", s["waiting"]),
        ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", usage),
        ("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", s["queries"]),
        ("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", s["hits"]),
        ("vllm:external_prefix_cache_queries_total", "counter", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", s["ext_queries"]),
        ("vllm:external_prefix_cache_hits_total", "counter", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", s["ext_hits"]),
        ("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", 0.0),
        ("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", s["prompt"]),
        ("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", s["gen"]),
    ]
    out = []
    for name, typ, help_, v in fams:
        base = name[:-len("_total")] if typ == "counter" else name
        out.append(f"# HELP {base} {help_}\n# TYPE {base} {typ}\n{name}{{{LABELS}}} {float(v)}\n")
    return "".join(out).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, code, body=b"", ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self.reply(200)
        elif self.path == "/metrics":
            self.reply(200, metrics(), "text/plain; version=0.0.4; charset=utf-8")
        else:
            self.reply(404, b'{"detail":"Not Found"}')

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        if path == "/reset_prefix_cache" and dev_mode:
            if fail_reset:
                self.reply(500, b"Internal Server Error", "text/plain")
                return
            with lock:
                if state["running"] == 0:  # vLLM refuses while blocks are in use, and still answers 200
                    cache.clear()
                    if "reset_external=true" in self.path:
                        tier.clear()
                    state["resets"] += 1
            self.reply(200)
        elif path in ("/start_profile", "/stop_profile") and profiler.get("profiler") in ("torch", "cuda"):
            self.profile(path)
            self.reply(200)
        elif path == "/v1/completions":
            req = json.loads(body or b"{}")
            with lock:
                state["running"] += 1
            try:
                cached, n = complete(str(req.get("prompt", "")))
            finally:
                with lock:
                    state["running"] -= 1
            out = {"object": "text_completion", "choices": [{"index": 0, "text": "x", "finish_reason": "length"}],
                   "usage": {"prompt_tokens": n, "completion_tokens": 1, "total_tokens": n + 1,
                             "prompt_tokens_details": {"cached_tokens": cached}}}
            self.reply(200, json.dumps(out).encode())
        else:
            self.reply(404, b'{"detail":"Not Found"}')

    def profile(self, path):
        with lock:
            if path == "/start_profile":
                state["profile_started"] = time.time_ns()
                return
            started = state.pop("profile_started", None)
        if started is None or profiler.get("profiler") != "torch":
            return
        d = profiler["torch_profiler_dir"]
        os.makedirs(d, exist_ok=True)
        trace = {"traceEvents": [{"name": "standin_window", "ph": "X", "pid": os.getpid(), "tid": 0,
                                  "ts": started // 1000, "dur": (time.time_ns() - started) // 1000}]}
        with gzip.open(os.path.join(d, f"standin-rank0.{time.time_ns()}.pt.trace.json.gz"), "wt") as f:
            json.dump(trace, f)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
with open(os.path.join(cell, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(cell, "port.tmp"), os.path.join(cell, "port"))
server.serve_forever()
