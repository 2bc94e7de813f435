#!/usr/bin/env python3
"""Benchmark of webhook delivery next to bad receivers: does a healthy receiver get every delivery, and
does the API keep its latency, while receivers that hang, fail or refuse are registered too?

    .venv/bin/python bench/webhooks.py                     # after only: about 1 minute
    .venv/bin/python bench/webhooks.py --baseline main     # before (a commit) and after: a few minutes more

For each version and each setup ("healthy only": one webhook on a receiver that answers 200 at once;
"with 4 bad": the same plus one webhook on each of a receiver that never answers, one that answers
500, one that closes the connection without a reply, and a closed port), a fresh
`mockserver serve --clock manual` (pinned to CPU 0) gets --rounds deploys of the fixture application
(each: deploy, advance the clock 1 s, then 8 s: a DEPLOYMENT_STARTED and a DEPLOYMENT_SUCCEEDED event
for every webhook; failed deliveries to the bad receivers fall due for their retries as the clock
moves). Meanwhile a prober sends `GET /organization` over one keep-alive connection every 10 ms and
times each reply. Then the healthy receiver is given 30 s to get everything.

Figures: deliveries the healthy receiver got, how many on their first attempt, the time from the
clock move that made an event due to its arrival (p50/p99/max), the attempts to bad receivers the
mock made, and the prober's p50/p99/max and count of replies over 100 ms. The receivers run in a
process of their own on CPU 1, with the driver and the prober.

"before" is --baseline REV exported with `git archive` into a temporary folder and run with this
venv through PYTHONPATH; "after" is the checkout. Results: stdout and bench/results/webhooks.json.
"""
import argparse
import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # ROOT, RESULTS, PYTHON, RATE, TOKEN, ORG, APP, call, stop

ROOT, RESULTS, PYTHON = run.ROOT, run.RESULTS, run.PYTHON
EVENTS = ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]
PROBE_EVERY = 0.010


# ------------------------------------------------------------------ the receivers (a process of their own)
def serve_receivers():
    """Start the good, hanging, closing and failing receivers; print their URLs as one JSON line."""
    arrivals = []
    lock = threading.Lock()

    class Good(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = b""
            if self.path == "/stats":
                with lock:
                    body = json.dumps(arrivals).encode()
            else:
                with lock:
                    arrivals.append([time.time(), self.headers.get("X-Mock-Delivery")])
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Failing(Good):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def http_server(handler):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    def raw_server(close):
        listener = socket.create_server(("127.0.0.1", 0), backlog=1024)

        def hold(connection):
            with connection:
                try:
                    connection.recv(65536)
                    while not close and connection.recv(65536):
                        pass
                except OSError:
                    pass

        def accept():
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=hold, args=(connection,), daemon=True).start()
        threading.Thread(target=accept, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    urls = {"good": http_server(Good), "hanging": raw_server(False), "closing": raw_server(True),
            "failing": http_server(Failing), "closed port": closed}
    print(json.dumps(urls), flush=True)
    sys.stdin.read()                          # until the driver closes our standard input


# ------------------------------------------------------------------ the driver
def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Prober(threading.Thread):
    """GET /organization every PROBE_EVERY seconds over one keep-alive connection, each reply timed."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.latencies, self.errors, self.running = port, [], 0, True

    def run(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        while self.running:
            started = time.perf_counter()
            try:
                connection.request("GET", "/organization", headers=run.TOKEN)
                reply = connection.getresponse()
                reply.read()
                if reply.status != 200:
                    self.errors += 1
            except OSError:
                self.errors += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.latencies.append(time.perf_counter() - started)
            time.sleep(PROBE_EVERY)
        connection.close()


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else None


def one_run(version, tree, bad, rounds, log):
    receivers = subprocess.Popen(["taskset", "-c", "1", PYTHON, __file__, "--serve-receivers"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
    urls = json.loads(receivers.stdout.readline())
    port = free_port()
    mock = _start_at(tree, port, log)
    try:
        hooks = ["good"] + (["hanging", "failing", "closing", "closed port"] if bad else [])
        for name in hooks:
            status, _ = run.call(port, "POST", f"/organization/{run.ORG}/webhook",
                                 {"target_url": f"{urls[name]}/{name.replace(' ', '-')}", "events": EVENTS, "enabled": True})
            assert status == 201, status
        prober = Prober(port)
        prober.start()
        due = {}                               # deployment request id -> [started due at, succeeded due at]
        began = time.perf_counter()
        for _ in range(rounds):
            status, body = run.call(port, "POST", f"/application/{run.APP}/deploy", {})
            assert status == 202, (status, body)
            ident = json.loads(body)["id"]
            run.call(port, "POST", "/_mock/clock/advance", {"seconds": 1})
            due[ident] = [time.time()]
            run.call(port, "POST", "/_mock/clock/advance", {"seconds": 8})
            due[ident].append(time.time())
        driven = time.perf_counter() - began
        deadline = time.time() + 30
        while time.time() < deadline and len(_arrivals(urls)) < 2 * rounds:
            time.sleep(0.2)
        time.sleep(1.0)
        prober.running = False
        prober.join()
        _, body = run.call(port, "GET", "/_mock/webhooks/deliveries")
        return _figures(version, bad, rounds, driven, json.loads(body)["results"], _arrivals(urls), due, prober)
    finally:
        run.stop(mock)
        receivers.stdin.close()
        receivers.wait(10)


def _start_at(tree, port, log):
    """`mockserver serve` of a tree (its mockserver/ first on PYTHONPATH), on CPU 0, once it answers."""
    proc = subprocess.Popen(["taskset", "-c", "0", PYTHON, "-m", "mockserver", "serve", "--clock", "manual",
                             "--port", str(port), "--rate-limit", run.RATE], stdout=log, stderr=log, cwd=tree,
                            env={**os.environ, "PYTHONPATH": str(tree)})
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            run.call(port, "GET", "/_mock/health", headers={}, timeout=1)
            return proc
        except OSError:
            time.sleep(0.05)
    run.stop(proc)
    sys.exit(f"the {tree} mock did not start (log: {log.name})")


def _arrivals(urls):
    host, port = urls["good"].removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("POST", "/stats", body=b"")
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def _figures(version, bad, rounds, driven, deliveries, arrivals, due, prober):
    good = [d for d in deliveries if d["target_url"].endswith("/good")]
    arrived = {int(ident): at for at, ident in arrivals}
    delays = []
    for delivery in good:
        at = arrived.get(delivery["id"])
        times = due.get(delivery["payload"]["deployment_request_id"])
        if at is not None and times:
            delays.append(max(0.0, at - times[0 if delivery["event_type"] == "DEPLOYMENT_STARTED" else 1]))
    bad_attempts = sum(len(d["attempts"]) for d in deliveries if not d["target_url"].endswith("/good"))
    latencies = prober.latencies
    ms = lambda value: None if value is None else round(value * 1000, 2)   # noqa: E731
    return {
        "version": version, "setup": "with 4 bad" if bad else "healthy only", "rounds": rounds,
        "driver_seconds": round(driven, 2),
        "good_expected": 2 * rounds, "good_received": len(arrived),
        "good_delivered": sum(d["status"] == "DELIVERED" for d in good),
        "good_first_attempt": sum(d["status"] == "DELIVERED" and len(d["attempts"]) == 1 for d in good),
        "good_failed_attempts": sum(a["status_code"] is None or a["status_code"] >= 300
                                    for d in good for a in d["attempts"]),
        "delivery_p50_ms": ms(percentile(delays, 0.5)), "delivery_p99_ms": ms(percentile(delays, 0.99)),
        "delivery_max_ms": ms(max(delays) if delays else None),
        "bad_attempts": bad_attempts,
        "api_requests": len(latencies), "api_errors": prober.errors,
        "api_p50_ms": ms(percentile(latencies, 0.5)), "api_p99_ms": ms(percentile(latencies, 0.99)),
        "api_max_ms": ms(max(latencies) if latencies else None),
        "api_over_100ms": sum(value > 0.1 for value in latencies),
    }


# ------------------------------------------------------------------ report
COLUMNS = [("version", "version"), ("setup", "setup"), ("good received", "good_received"),
           ("first attempt", "good_first_attempt"), ("delivery p50 ms", "delivery_p50_ms"),
           ("delivery p99 ms", "delivery_p99_ms"), ("bad attempts", "bad_attempts"),
           ("API p50 ms", "api_p50_ms"), ("API p99 ms", "api_p99_ms"), ("API max ms", "api_max_ms"),
           ("API > 100 ms", "api_over_100ms")]


def table(results):
    lines = ["| " + " | ".join(title for title, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in results:
        cells = []
        for _, key in COLUMNS:
            value = row[key]
            if key == "good_received":
                value = f"{value} of {row['good_expected']}"
            cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def exported(rev):
    """The mockserver package and fixtures of a commit, in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="bench-webhooks-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "mockserver", "fixtures"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100, help="deploys, 2 events each (default 100)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each version and setup (default 1)")
    parser.add_argument("--baseline", help="also measure this commit as \"before\" (e.g. main)")
    parser.add_argument("--serve-receivers", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_receivers:
        serve_receivers()
        return
    versions = [("after", ROOT)]
    if args.baseline:
        versions.insert(0, (f"before ({args.baseline})", exported(args.baseline)))
    RESULTS.mkdir(exist_ok=True)
    results = []
    with open(RESULTS / "webhooks.raw", "w") as log:
        for _ in range(args.runs):
            for version, tree in versions:
                for bad in (False, True):
                    row = one_run(version, tree, bad, args.rounds, log)
                    print(json.dumps(row), flush=True)
                    results.append(row)
    print(table(results))
    (RESULTS / "webhooks.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
