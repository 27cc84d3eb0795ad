#!/usr/bin/env python3
"""A minimal engine for bench/torch-profile.sh on a real GPU host: a
matrix-product workload runs in a thread (CUDA when there is a GPU), and an
HTTP server answers the profiler routes vLLM and SGLang serve, with the
host's real profilers behind them:

    torch-profile-engine.py PORT_FILE torch|cuda

POST /start_profile {"output_dir": DIR} starts torch.profiler (torch; DIR
as SGLang takes it) or cudaProfilerStart (cuda: what nsys
--capture-range cudaProfilerApi waits for); POST /stop_profile stops it
and, for torch, writes DIR/engine.TIME_NS.pt.trace.json.gz before it
answers 200, as the engines do. GET /metrics answers an empty exposition.
The profiler starts and stops in the workload's own thread, as an engine's
worker does: torch's profiler (Kineto) must be stopped by the thread that
started it, so the HTTP handler hands each request to that thread and
waits for it.
"""
import gzip
import http.server
import json
import os
import queue
import sys
import threading
import time

import torch

port_file, mode = sys.argv[1], sys.argv[2]
dev = "cuda" if torch.cuda.is_available() else "cpu"
lock = threading.Lock()
prof = {"p": None, "dir": None}
requests = queue.Queue()


def profiler(path, body):
    if path == "/start_profile":
        if mode == "cuda":
            torch.cuda.profiler.start()
            return
        acts = [torch.profiler.ProfilerActivity.CPU]
        if dev == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        prof["dir"] = json.loads(body or b"{}").get("output_dir") or "."
        prof["p"] = torch.profiler.profile(activities=acts)
        prof["p"].start()
    elif mode == "cuda":
        torch.cuda.profiler.stop()
    elif prof["p"] is not None:
        prof["p"].stop()
        os.makedirs(prof["dir"], exist_ok=True)
        tmp = os.path.join(prof["dir"], "trace.json")
        prof["p"].export_chrome_trace(tmp)
        with open(tmp, "rb") as f, gzip.open(os.path.join(prof["dir"], f"engine.{time.time_ns()}.pt.trace.json.gz"), "wb") as g:
            g.write(f.read())
        os.remove(tmp)
        prof["p"] = None


def work():
    a = torch.randn(2048, 2048, device=dev)
    while True:
        try:
            path, body, done = requests.get_nowait()
            try:
                profiler(path, body)
                done.put(None)
            except Exception as e:  # the handler answers 500 with it
                done.put(e)
        except queue.Empty:
            pass
        b = a @ a
        if dev == "cuda":
            torch.cuda.synchronize()
        a = b / b.norm()


class H(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(200 if self.path == "/metrics" else 404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path not in ("/start_profile", "/stop_profile"):
            self.reply(404)
            return
        with lock:
            done = queue.Queue()
            requests.put((self.path, body, done))
            err = done.get()
        if err is not None:
            self.reply(500, str(err).encode())
            return
        self.reply(200)

    def log_message(self, *a):
        pass


threading.Thread(target=work, daemon=True).start()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
