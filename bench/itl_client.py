"""Load for bench/telemetry-overhead.sh: CONCURRENCY clients stream
requests of TOKENS tokens from the stand-in engine for SECONDS and print
the median inter-token latency in ms (the gaps between a request's
tokens as the client receives them) and how many gaps it measured.

    python3 bench/itl_client.py PORT CONCURRENCY TOKENS SECONDS"""
import http.client
import statistics
import sys
import threading
import time

port, conc, tokens, secs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
gaps = []
lock = threading.Lock()
end = time.monotonic() + secs


def client():
    mine = []
    while time.monotonic() < end:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/generate?n=%d" % tokens)
        r = c.getresponse()
        last = None
        while True:
            line = r.fp.readline()
            if not line:
                break
            now = time.perf_counter()
            if last is not None:
                mine.append(now - last)
            last = now
        c.close()
    with lock:
        gaps.extend(mine)


ts = [threading.Thread(target=client) for _ in range(conc)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("%.6f %d" % (statistics.median(gaps) * 1e3, len(gaps)))
