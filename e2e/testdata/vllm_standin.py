#!/usr/bin/env python3
"""A stand-in for a vLLM server's /metrics, as vLLM v1 writes it (the
families and types of v0.11: counters with _total, labelled by engine and
model): every scrape the engine has served 1000 more prompt tokens, of
which HIT were prefix-cache hits.

    vllm_standin.py [--port PORT] CELL_DIR HIT

It listens on PORT (default: a free loopback port), writes the port to
CELL_DIR/port, and answers /health as vLLM's server does.
"""
import http.server
import os
import sys

args = sys.argv[1:]
port = 0
if args[0] == "--port":
    port, args = int(args[1]), args[2:]
cell, hit = args[0], float(args[1])
state = {"queries": 0.0, "hits": 0.0, "preemptions": 0.0}
LABELS = 'engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"'


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path != "/metrics":
            self.send_error(404)
            return
        state["queries"] += 1000
        state["hits"] += 1000 * hit
        body = (
            "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n"
            "# TYPE vllm:prefix_cache_queries_total counter\n"
            f"vllm:prefix_cache_queries_total{{{LABELS}}} {state['queries']}\n"
            "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
            "# TYPE vllm:prefix_cache_hits_total counter\n"
            f"vllm:prefix_cache_hits_total{{{LABELS}}} {state['hits']}\n"
            "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f"vllm:kv_cache_usage_perc{{{LABELS}}} {min(0.9, state['queries'] / 10000)}\n"
            "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.\n"
            "# TYPE vllm:num_preemptions_total counter\n"
            f"vllm:num_preemptions_total{{{LABELS}}} 0.0\n"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", port), Handler)
with open(os.path.join(cell, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(cell, "port.tmp"), os.path.join(cell, "port"))
server.serve_forever()
