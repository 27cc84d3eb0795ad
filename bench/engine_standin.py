"""A stand-in engine server for bench/telemetry-overhead.sh: tokens
streamed over HTTP and a Prometheus /metrics page served by the same
process, as vLLM's API server does (one Python process, one GIL).

    python3 bench/engine_standin.py PORT_FILE

GET /generate?n=N streams N lines ("data: TOKEN"), one every STEP_S
seconds of "GPU" time (a sleep, which releases the GIL like a CUDA
wait) plus a little Python work a token. GET /metrics renders about
60 KB of exposition text a scrape (vLLM's families with their
histograms), the work prometheus_client does on each scrape."""
import http.server
import socketserver
import sys
import threading
import time

STEP_S = 0.004
counters = {"hits": 0, "queries": 0}
lock = threading.Lock()


def metrics():
    out = []
    with lock:
        hits, queries = counters["hits"], counters["queries"]
    out.append("# TYPE vllm:prefix_cache_queries_total counter")
    out.append('vllm:prefix_cache_queries_total{engine="0",model_name="m"} %d' % queries)
    out.append("# TYPE vllm:prefix_cache_hits_total counter")
    out.append('vllm:prefix_cache_hits_total{engine="0",model_name="m"} %d' % hits)
    out.append("# TYPE vllm:kv_cache_usage_perc gauge")
    out.append('vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.42')
    for f in range(40):
        out.append("# TYPE vllm:stand_in_histogram_%d histogram" % f)
        for le in range(24):
            out.append('vllm:stand_in_histogram_%d_bucket{engine="0",model_name="m",le="%g"} %d' % (f, 0.001 * 2 ** le, le * 7 + f))
        out.append('vllm:stand_in_histogram_%d_sum{engine="0",model_name="m"} %g' % (f, f * 1.5))
        out.append('vllm:stand_in_histogram_%d_count{engine="0",model_name="m"} %d' % (f, f * 3))
    return ("\n".join(out) + "\n").encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path == "/metrics":
            body = metrics()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if not self.path.startswith("/generate"):
            self.send_error(404)
            return
        n = int(self.path.split("n=", 1)[1]) if "n=" in self.path else 64
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(n):
            time.sleep(STEP_S)
            tok = ("data: %d %s\n" % (i, "x" * (i % 7))).encode()
            with lock:
                counters["queries"] += 16
                counters["hits"] += 8
            self.wfile.write(tok)
            self.wfile.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


if __name__ == "__main__":
    srv = Server(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()
