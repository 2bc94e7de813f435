#!/usr/bin/env python3
"""Benchmark of sandboxes and snapshots (method and figures in docs/performance.md).

    .venv/bin/python bench/sandboxes.py                  # everything, about 9 minutes
    .venv/bin/python bench/sandboxes.py --only create,rss  # some parts: create, lookup, load, rss, snapshots

create     create and reset p50/p99: in-process (`sandboxes.create`, `reset_sandbox`) and over HTTP
           (PUT /_mock/sandboxes/{n}, POST .../reset, POST /_mock/reset), next to the old way of
           making a world (replaying the fixtures through the handlers: `MockServer.build`)
lookup     CPU time per request of the mixed load in-process: the code before sandboxes, the
           default sandbox, one named sandbox (header or prefix), 100 sandboxes; the lookup alone
load       req/s and server CPU per request of the mixed load (bench/sandboxes.lua) on the default
           sandbox, on one named sandbox (header or prefix), spread over 100 sandboxes, and on the
           code before sandboxes (a temporary git worktree of the commit before "Sandboxes:", same venv)
rss        RSS and idle CPU of a live server before and after creating 1,000 default sandboxes
snapshots  freeze (snapshot), thaw (restore) and save-to-disk times of a world of about 53
           (the fixtures), 1,000 and 100,000 resources, filled through the handlers

Servers and in-process timing run on CPU 0, wrk on CPU 1 (one thread, 8 connections), as in
bench/run.py. Servers not under load are stopped (SIGSTOP) so they do not steal CPU 0. CPU time
(not wall time) compares request paths: it stays comparable while other work loads the machine.
Results: stdout, bench/results/sandboxes.md and bench/results/sandboxes.json.
Run with the project's venv (the in-process parts import mockserver).
"""
import argparse
import asyncio
import gc
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # the helpers of bench/run.py: start, stop, wrk binary, rss

BENCH, ROOT, RESULTS = run.BENCH, run.ROOT, run.RESULTS
RATE = run.RATE
ORG, PROJECT, APP = run.ORG, run.PROJECT, run.APP


def load_avg():
    return round(os.getloadavg()[0], 2)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def summary_ms(seconds):
    """p50/p99/mean in ms of a list of durations in seconds."""
    return {"p50_ms": round(pct(seconds, 50) * 1e3, 4), "p99_ms": round(pct(seconds, 99) * 1e3, 4),
            "mean_ms": round(statistics.fmean(seconds) * 1e3, 4), "n": len(seconds)}


class Client:
    """One keep-alive HTTP/1.1 connection: the time of a control call as a client sees it."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else None
        head = dict(run.TOKEN if headers is None else headers)
        if data is not None:
            head["Content-Type"] = "application/json"
        began = time.perf_counter()
        try:
            self.conn.request(method, path, data, head)
            reply = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.conn.close()                       # the server closed an idle keep-alive connection: again
            began = time.perf_counter()
            self.conn.request(method, path, data, head)
            reply = self.conn.getresponse()
        payload = reply.read()
        took = time.perf_counter() - began
        return reply.status, payload, took

    def timed(self, method, path, body=None, expect=(200, 201, 204)):
        status, payload, took = self.call(method, path, body)
        if status not in expect:
            sys.exit(f"{method} {path}: {status} {payload[:300]!r}")
        return took

    def close(self):
        self.conn.close()


def free_port():
    """A port nobody listens on (others may run servers on this machine at the same time)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(port, name, extra=(), env=None, cwd=ROOT):
    """`mockserver serve` on CPU 0 (from this repository, or another checkout through PYTHONPATH)."""
    port = port or free_port()
    cmd = [run.PYTHON, "-m", "mockserver", "serve", "--port", str(port), "--rate-limit", RATE, *extra]
    log = open(RESULTS / f"sandboxes-{name}.log.raw", "w")
    began = time.perf_counter()
    proc = subprocess.Popen(["taskset", "-c", "0", *cmd], stdout=log, stderr=log, cwd=cwd,
                            env={**os.environ, **(env or {})})
    while time.perf_counter() - began < 120:
        if proc.poll() is not None:
            sys.exit(f"server {name} exited with {proc.returncode} (log: {log.name})")
        try:
            run.call(port, "GET", "/organization", headers={}, timeout=1)
        except OSError:
            time.sleep(0.02)
            continue
        time.sleep(0.3)                               # the one answering must be ours, not a bind failure
        if proc.poll() is not None:
            sys.exit(f"server {name} exited with {proc.returncode}, port {port} taken? (log: {log.name})")
        return proc, port
    run.stop(proc)
    sys.exit(f"server {name} did not answer within 120 s")


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pin_here():
    try:
        os.sched_setaffinity(0, {0})
    except OSError:
        pass


# ------------------------------------------------------------------ 1. create and reset
def rounds_ms(rounds):
    """Median of the rounds' p50 with their spread, and p99/mean of all samples, in ms."""
    pooled = [x for r in rounds for x in r]
    p50s = [pct(r, 50) * 1e3 for r in rounds]
    return {"p50_ms": round(statistics.median(p50s), 4), "p50_min": round(min(p50s), 4),
            "p50_max": round(max(p50s), 4), "p99_ms": round(pct(pooled, 99) * 1e3, 4),
            "mean_ms": round(statistics.fmean(pooled) * 1e3, 4), "n": len(pooled), "rounds": len(rounds)}


def create_reset(args, port):
    from mockserver.app import MockServer
    from mockserver.core.clock import Clock
    from mockserver.core.settings import Settings

    pin_here()
    out = {"load_before": load_avg()}
    server = MockServer(Settings(rate_limit=10**9, rate_window=3600, max_sandboxes=100_000))
    gc.freeze()                                   # as `mockserver serve` does after start-up
    gc.set_threshold(10_000, 50, 1000)
    n = args.samples
    few = max(10, n // 10)

    def timed(fn, count):
        took = []
        for i in range(count):
            began = time.perf_counter()
            fn(i)
            took.append(time.perf_counter() - began)
        return took

    timed(lambda i: server.sandboxes.create(f"warm{i}"), 50)
    for i in range(50):
        server.sandboxes.delete(f"warm{i}")
    runs = {"create": [], "reset": [], "build (replay)": []}
    for r in range(args.rounds):
        runs["create"].append(timed(lambda i: server.sandboxes.create(f"c{r}_{i}"), n))
        box = server.sandboxes.find(f"c{r}_0")
        runs["reset"].append(timed(lambda i: server.reset_sandbox(box), n))
        for i in range(n):
            server.sandboxes.delete(f"c{r}_{i}")
        runs["build (replay)"].append(
            timed(lambda i: server.build(server.settings, Clock(server.settings.clock), server.fixtures), few))
    out["in_process"] = {what: rounds_ms(rs) for what, rs in runs.items()}
    out["origin_bytes"] = len(server.origin)
    out["resources"] = sum(server.rt.store.count().values())
    server = None                                 # its memory back before the live server starts
    gc.unfreeze()
    gc.collect()
    for what, f in out["in_process"].items():
        print(f"  in-process {what:16} p50 {f['p50_ms']:.3f} ms ({f['p50_min']:.3f}-{f['p50_max']:.3f}) "
              f"p99 {f['p99_ms']:.3f} ms", flush=True)

    proc, port = serve(port, "create", ["--max-sandboxes", str(n + 10)])
    names = {"health": "GET /_mock/health (the HTTP round trip alone)",
             "put": "PUT /_mock/sandboxes/{n} (create)",
             "reset": "POST /_mock/sandboxes/{n}/reset",
             "reset_default": "POST /_mock/reset (default sandbox)",
             "delete": "DELETE /_mock/sandboxes/{n}",
             "replay": "PUT /_mock/sandboxes/{n} {\"seed\": n} (built by replaying the fixtures)"}
    runs = {key: [] for key in names}
    try:
        client = Client(port)
        for i in range(20):
            client.timed("PUT", f"/_mock/sandboxes/w{i}")
            client.timed("DELETE", f"/_mock/sandboxes/w{i}")
        for _ in range(args.rounds):
            runs["health"].append([client.timed("GET", "/_mock/health") for _ in range(n)])
            runs["put"].append([client.timed("PUT", f"/_mock/sandboxes/h{i}") for i in range(n)])
            runs["reset"].append([client.timed("POST", f"/_mock/sandboxes/h{i % 10}/reset") for i in range(n)])
            runs["reset_default"].append([client.timed("POST", "/_mock/reset") for _ in range(n)])
            runs["delete"].append([client.timed("DELETE", f"/_mock/sandboxes/h{i}") for i in range(n)])
            runs["replay"].append([client.timed("PUT", f"/_mock/sandboxes/r{i}", {"seed": i}) for i in range(few)])
            for i in range(few):
                client.timed("DELETE", f"/_mock/sandboxes/r{i}")
        client.close()
    finally:
        run.stop(proc)
    out["http"] = {names[key]: rounds_ms(rs) for key, rs in runs.items()}
    out["load_after"] = load_avg()
    for what, f in out["http"].items():
        print(f"  HTTP {what:72} p50 {f['p50_ms']:.3f} ms ({f['p50_min']:.3f}-{f['p50_max']:.3f}) "
              f"p99 {f['p99_ms']:.3f} ms", flush=True)
    return out


# ------------------------------------------------------------------ 2. req/s with sandboxes
def wrk_mixed(port, mode, count, tag, secs):
    cmd = ["taskset", "-c", "1", "wrk", "-t1", "-c8", f"-d{secs}s", "--timeout=10s", "-s",
           str(BENCH / "sandboxes.lua"), f"http://127.0.0.1:{port}", "--", mode, str(count), tag]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"wrk failed: {' '.join(cmd)}\n{done.stderr}")
    result = json.loads(next(line[7:] for line in done.stdout.splitlines() if line.startswith("RESULT ")))
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    result["errors"] = result["socket_errors"] + sum(
        n for status, n in result["statuses"].items() if not 200 <= int(status) < 300 and int(status) != 401)
    result["share_401"] = round(result["statuses"].get("401", 0) / max(1, result["requests"]), 3)
    return result


def prepare(port, sandboxes):
    """50 projects in the default sandbox; `sandboxes` named ones s0.. copied from it (a snapshot)."""
    client = Client(port)
    for n in range(48):
        client.timed("POST", f"/organization/{ORG}/project", {"name": f"bench-{n}"}, expect=(201,))
    if sandboxes:
        client.timed("POST", "/_mock/snapshots", {"name": "bench50"})
        for k in range(sandboxes):
            client.timed("PUT", f"/_mock/sandboxes/s{k}", {"snapshot": "bench50"})
    client.close()


def before_sandboxes():
    """The commit before the one that brought sandboxes (its subject starts with "Sandboxes:")."""
    sha = subprocess.run(["git", "-C", str(ROOT), "log", "--format=%H", "-n1", "--grep=^Sandboxes:"],
                         capture_output=True, text=True, check=True).stdout.strip()
    if not sha:
        sys.exit("no commit starting with 'Sandboxes:' in the history")
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", f"{sha}^"], capture_output=True, text=True,
                          check=True).stdout.strip()


def before_worktree(args):
    """The commit to compare with (--before, else the one before sandboxes) checked out in a temporary
    git worktree: (commit, path). `remove_worktree` removes it."""
    before = args.before or before_sandboxes()
    tree = Path(tempfile.mkdtemp(prefix="pre-sandboxes-"))
    tree.rmdir()
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), before], check=True,
                   capture_output=True)
    return before, tree


def remove_worktree(tree):
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


LOADS = (  # (label, server, wrk mode, sandboxes the load goes to)
    ("before sandboxes (commit {before}), no sandbox named", "pre", "none", 1),
    ("default sandbox, no sandbox named", "one", "none", 1),
    ("one named sandbox, X-Mock-Sandbox", "one", "header", 1),
    ("one named sandbox, /sandbox/{{name}} prefix", "one", "prefix", 1),
    ("default sandbox while 100 others exist", "hundred", "none", 1),
    ("100 sandboxes, X-Mock-Sandbox (one per 4 requests in turn)", "hundred", "header", 100),
    ("100 sandboxes, /sandbox/{{name}} prefix", "hundred", "prefix", 100),
)


def load(args, port):
    before, tree = before_worktree(args)
    procs = {}
    out = {"before": before, "load_before": load_avg(), "runs": args.runs, "seconds": args.seconds, "rows": []}
    try:
        procs["pre"] = serve(port, "pre", env={"PYTHONPATH": str(tree)}, cwd=tree)
        prepare(procs["pre"][1], 0)
        procs["one"] = serve(port and port + 1, "one")
        prepare(procs["one"][1], 1)
        procs["hundred"] = serve(port and port + 2, "hundred")
        prepare(procs["hundred"][1], 100)
        for proc, _ in procs.values():
            proc.send_signal(signal.SIGSTOP)
        results = {label: [] for label, *_ in LOADS}

        def one_run(label, which, mode, count, tag, secs):
            proc, p = procs[which]
            proc.send_signal(signal.SIGCONT)
            try:
                cpu = cpu_seconds(proc.pid)
                result = wrk_mixed(p, mode, count, tag, secs)
                result["cpu_us"] = (cpu_seconds(proc.pid) - cpu) / result["requests"] * 1e6
                return result
            finally:
                proc.send_signal(signal.SIGSTOP)

        for label, which, mode, count in LOADS:            # warm-up
            one_run(label, which, mode, count, f"{mode}{count}w", 1)
        for rep in range(args.runs):                        # round robin: noise spreads over every row
            for label, which, mode, count in LOADS:
                r = one_run(label, which, mode, count, f"{mode}{count}r{rep}", args.seconds)
                r["load"] = load_avg()
                results[label].append(r)
        for label, which, mode, count in LOADS:
            rs = results[label]
            rps = [r["rps"] for r in rs]
            out["rows"].append({"load": label.format(before=before[:7]), "server": which, "mode": mode,
                                "sandboxes": count, "rps": statistics.median(rps), "rps_min": min(rps),
                                "rps_max": max(rps), "p50_ms": statistics.median(r["p50_us"] for r in rs) / 1000,
                                "p99_ms": statistics.median(r["p99_us"] for r in rs) / 1000,
                                "cpu_us": statistics.median(r["cpu_us"] for r in rs),
                                "cpu_us_min": min(r["cpu_us"] for r in rs), "cpu_us_max": max(r["cpu_us"] for r in rs),
                                "errors": sum(r["errors"] for r in rs),
                                "share_401": statistics.median(r["share_401"] for r in rs), "runs": rs})
        base, default = out["rows"][0], out["rows"][1]
        for row in out["rows"]:
            row["vs_before"] = row["rps"] / base["rps"]
            row["vs_default"] = row["rps"] / default["rps"]
            row["cpu_vs_before"] = row["cpu_us"] / base["cpu_us"]
            row["cpu_vs_default"] = row["cpu_us"] / default["cpu_us"]
            print(f"  {row['load']:62} {row['rps']:8.0f} req/s ({row['rps_min']:.0f}-{row['rps_max']:.0f}) "
                  f"{row['vs_before']:.3f} of before; server CPU {row['cpu_us']:.1f} us/request "
                  f"({row['cpu_us_min']:.1f}-{row['cpu_us_max']:.1f}) {row['cpu_vs_before']:.3f} of before; "
                  f"errors {row['errors']}", flush=True)
        # paired per round: the spread of the ratio itself (both measured within a few seconds)
        for label, *_ in LOADS[1:]:
            ratios = [b["rps"] / a["rps"] for a, b in zip(results[LOADS[0][0]], results[label])]
            row = next(r for r in out["rows"] if r["load"] == label.format(before=before[:7]))
            row["paired_vs_before"] = [round(x, 3) for x in ratios]
        for label, *_ in LOADS[2:]:
            ratios = [b["rps"] / a["rps"] for a, b in zip(results[LOADS[1][0]], results[label])]
            row = next(r for r in out["rows"] if r["load"] == label.format(before=before[:7]))
            row["paired_vs_default"] = [round(x, 3) for x in ratios]
    finally:
        for proc, _ in procs.values():
            proc.send_signal(signal.SIGCONT)
            run.stop(proc)
        remove_worktree(tree)
    out["load_after"] = load_avg()
    return out


# ------------------------------------------------------------------ 2b. the lookup in-process
MIXED = (("GET", f"/application/{APP}/status", True), ("GET", f"/organization/{ORG}/project", True),
         ("POST", f"/project/{PROJECT}/environmentVariable", True), ("GET", "/organization", False))


def _scope(method, path, auth, mode, body=b"", box="s0"):
    headers = [(b"host", b"mock")] + ([(b"authorization", b"Token mock-admin-token")] if auth else [])
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if mode.startswith("header"):
        headers.append((b"x-mock-sandbox", box.encode()))
    if mode == "prefix":
        path = f"/sandbox/{box}" + path
    return {"type": "http", "http_version": "1.1", "method": method, "scheme": "http", "path": path,
            "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}


def inproc(mode, n, rounds):
    """CPU microseconds per request of the mixed load, in-process (run in a subprocess, for either code)."""
    from mockserver.app import MockServer
    from mockserver.core.settings import Settings

    pin_here()
    server = MockServer(Settings(rate_limit=10**9, rate_window=3600))
    gc.freeze()
    gc.set_threshold(10_000, 50, 1000)
    statuses = {}

    async def call(scope, body=b""):
        async def receive():
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                statuses[message["status"]] = statuses.get(message["status"], 0) + 1
        await server(scope, receive, send)

    async def drive(tag, count):                  # CPU time: what other processes take does not count
        began = time.process_time()
        for i in range(count):
            method, path, auth = MIXED[i % 4]
            body = b'{"key":"K_%s_%d","value":"v"}' % (tag.encode(), i) if method == "POST" else b""
            await call(_scope(method, path, auth, mode, body, f"s{i // 4 % spread}"), body)
        return (time.process_time() - began) / count * 1e6

    spread = 100 if mode == "header100" else 1

    async def main():
        for k in range(48):
            body = b'{"name":"bench-%d"}' % k
            for box in range(spread):
                await call(_scope("POST", f"/organization/{ORG}/project", True, mode, body, f"s{box}"), body)
        await drive("warm", 2000)
        return [await drive(f"r{r}", n) for r in range(rounds)]

    per_request = asyncio.run(main())
    lookup = {}
    if hasattr(server, "sandboxes"):               # the code before sandboxes has no lookup
        import timeit

        from mockserver.sandboxes.sandbox import choose
        for what in ("none", "header", "prefix"):
            scope = _scope("GET", f"/application/{APP}/status", True, what)
            fn = lambda: server.sandboxes.get(choose(scope)[0])  # noqa: E731
            lookup[what] = statistics.median(timeit.repeat(fn, number=20000, repeat=5)) / 20000 * 1e6
    print("INPROC " + json.dumps({"us_per_request": per_request, "lookup_us": lookup, "statuses": statuses}))


def lookup(args, port):
    """The mixed load in-process, per request: before sandboxes, and now without/with a sandbox named."""
    before, tree = before_worktree(args)
    variants = (("before sandboxes", "none", {"PYTHONPATH": str(tree)}, tree), ("default sandbox", "none", {}, ROOT),
                ("X-Mock-Sandbox: s0", "header", {}, ROOT), ("/sandbox/s0 prefix", "prefix", {}, ROOT),
                ("X-Mock-Sandbox over 100 sandboxes", "header100", {}, ROOT))
    out = {"before": before, "load_before": load_avg(), "rows": []}
    got = {label: [] for label, *_ in variants}
    lookups = {}
    try:
        for _ in range(args.runs):
            for label, mode, env, cwd in variants:
                done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--inproc", mode,
                                       "--samples", str(args.inproc_n), "--rounds", "3"], capture_output=True,
                                      text=True, cwd=cwd, env={**os.environ, **env})
                line = next((x for x in done.stdout.splitlines() if x.startswith("INPROC ")), None)
                if line is None:
                    sys.exit(f"in-process run {label} failed:\n{done.stderr[-2000:]}")
                result = json.loads(line[7:])
                got[label] += result["us_per_request"]
                if result["lookup_us"]:
                    lookups = result["lookup_us"]
                bad = {k: v for k, v in result["statuses"].items() if k not in ("200", "201", "401")}
                if bad:
                    sys.exit(f"in-process run {label}: unexpected statuses {bad}")
    finally:
        remove_worktree(tree)
    base = statistics.median(got[variants[0][0]])
    for label, *_ in variants:
        us = got[label]
        out["rows"].append({"variant": label, "us": statistics.median(us), "us_min": min(us), "us_max": max(us),
                            "vs_before": statistics.median(us) / base, "samples": us})
        print(f"  in-process {label:22} {statistics.median(us):6.1f} us/request ({min(us):.1f}-{max(us):.1f}) "
              f"{statistics.median(us) / base:.3f} of before", flush=True)
    out["lookup_us"] = lookups
    print(f"  choose + sandboxes.get alone: {', '.join(f'{k} {v:.2f} us' for k, v in lookups.items())}", flush=True)
    out["load_after"] = load_avg()
    return out


# ------------------------------------------------------------------ 3. memory of idle sandboxes
SLEEP_AFTER = 30                                      # the server's default --sleep-after
def rss(args, port):
    out = {"load_before": load_avg()}
    proc, port = serve(port, "rss", ["--max-sandboxes", "2000"])
    try:
        client = Client(port)
        for _ in range(200):                          # the request path warmed, as after any use
            client.call("GET", f"/application/{APP}/status", headers=run.TOKEN)
        time.sleep(1)
        out["rss_start_mib"] = run.rss_mib(proc.pid)
        c0 = cpu_seconds(proc.pid)
        time.sleep(args.idle)
        out["idle_cpu_1"] = round((cpu_seconds(proc.pid) - c0) / args.idle, 4)
        put = []
        for i in range(1000):
            put.append(client.timed("PUT", f"/_mock/sandboxes/idle{i}"))
        out["put_first_100"] = summary_ms(put[:100])
        out["put_last_100"] = summary_ms(put[-100:])
        time.sleep(1)
        out["rss_1000_mib"] = run.rss_mib(proc.pid)
        c0 = cpu_seconds(proc.pid)
        time.sleep(args.idle)
        out["idle_cpu_1001"] = round((cpu_seconds(proc.pid) - c0) / args.idle, 4)
        for i in range(1000):                         # one request each: the sandboxes in use once
            client.call("GET", f"/sandbox/idle{i}/application/{APP}/status", headers=run.TOKEN)
        time.sleep(1)
        out["rss_1000_used_mib"] = run.rss_mib(proc.pid)
        time.sleep(SLEEP_AFTER + 5)                   # idle past --sleep-after: the quiet worlds fall asleep
        listed = json.loads(client.call("GET", "/_mock/sandboxes", headers={})[1])["results"]
        out["asleep"] = sum(1 for box in listed if box.get("asleep"))
        out["rss_1000_asleep_mib"] = run.rss_mib(proc.pid)
        client.close()
    finally:
        run.stop(proc)
    out["per_sandbox_kib"] = round((out["rss_1000_mib"] - out["rss_start_mib"]) * 1024 / 1000, 1)
    out["per_sandbox_used_kib"] = round((out["rss_1000_used_mib"] - out["rss_start_mib"]) * 1024 / 1000, 1)
    out["per_sandbox_asleep_kib"] = round((out["rss_1000_asleep_mib"] - out["rss_start_mib"]) * 1024 / 1000, 1)
    out["load_after"] = load_avg()
    print(f"  RSS {out['rss_start_mib']} MiB -> {out['rss_1000_mib']} MiB with 1,000 more sandboxes "
          f"({out['per_sandbox_kib']} KiB each; {out['rss_1000_used_mib']} MiB after one request each; "
          f"{out['rss_1000_asleep_mib']} MiB once {out['asleep']} of them were asleep); "
          f"idle CPU {out['idle_cpu_1']:.1%} -> {out['idle_cpu_1001']:.1%}", flush=True)
    return out


# ------------------------------------------------------------------ 4. snapshots
async def _asgi(server, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    scope = {"type": "http", "http_version": "1.1", "method": method, "scheme": "http", "path": path,
             "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"mock"), (b"authorization", b"Token mock-admin-token"), (b"content-type", b"application/json"),
                         (b"content-length", str(len(data)).encode())],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    replies = []

    async def receive():
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message):
        replies.append(message)
    await server(scope, receive, send)
    return replies[0]["status"]


def snapshots(args, port):
    from mockserver.app import MockServer
    from mockserver.core.settings import Settings
    from mockserver.world.frozen import freeze, thaw

    pin_here()
    out = {"load_before": load_avg(), "levels": []}
    server = MockServer(Settings(rate_limit=10**9, rate_window=3600))
    gc.freeze()
    gc.set_threshold(10_000, 50, 1000)
    loop = asyncio.new_event_loop()
    made = 0
    for target in args.levels:
        rt = server.rt
        began = time.perf_counter()
        while sum(rt.store.count().values()) < target:
            missing = target - sum(rt.store.count().values())
            for _ in range(missing):
                status = loop.run_until_complete(
                    _asgi(server, "POST", f"/organization/{ORG}/project", {"name": f"snap-{made}"}))
                made += 1
                if status != 201:
                    sys.exit(f"creating a project answered {status}")
        filled = time.perf_counter() - began
        size = sum(rt.store.count().values())
        reps = 5 if size > 10_000 else 50
        data = freeze(rt, server.shared)
        freezes, thaws, saves = [], [], []
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(reps):
                t0 = time.perf_counter()
                data = freeze(rt, server.shared)
                t1 = time.perf_counter()
                copy = thaw(data, server.shared)
                t2 = time.perf_counter()
                with open(Path(tmp) / "world.bin", "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                t3 = time.perf_counter()
                freezes.append(t1 - t0)
                thaws.append(t2 - t1)
                saves.append(t3 - t2)
                del copy
        with_journal = [0.0]
        t0 = time.perf_counter()
        jdata = freeze(rt, server.shared, journal=True)
        with_journal[0] = time.perf_counter() - t0
        level = {"target": target, "resources": size, "projects": rt.store.count()["projects"],
                 "bytes": len(data), "journal_entries": len(rt.journal.entries), "bytes_with_journal": len(jdata),
                 "freeze": summary_ms(freezes), "thaw": summary_ms(thaws), "write_fsync": summary_ms(saves),
                 "freeze_with_journal_ms": round(with_journal[0] * 1e3, 3), "filled_s": round(filled, 2),
                 "load": load_avg()}
        out["levels"].append(level)
        print(f"  {size:>7,} resources ({len(data) / 1024:,.0f} KiB): snapshot (freeze) p50 "
              f"{level['freeze']['p50_ms']:.3f} ms, restore (thaw) p50 {level['thaw']['p50_ms']:.3f} ms, "
              f"write+fsync p50 {level['write_fsync']['p50_ms']:.3f} ms", flush=True)
    loop.close()
    out["load_after"] = load_avg()
    return out


# ------------------------------------------------------------------ report
def markdown(report):
    lines = [f"Sandboxes and snapshots benchmark of {report['date']} on {report['cpus']} CPUs "
             "(load average with each part). In-process timing and servers on CPU 0, wrk on CPU 1.", ""]
    c = report.get("create")
    if c:
        lines += [f"### Create and reset (load {c['load_before']} / {c['load_after']}; start world "
                  f"{c['resources']} resources, {c['origin_bytes']:,} bytes frozen)", "",
                  "| what | p50 ms (median of rounds) | p50 spread | p99 ms (all) | mean ms | n |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for where in ("in_process", "http"):
            for what, f in c[where].items():
                lines.append(f"| {'in-process' if where == 'in_process' else 'HTTP'} {what} | {f['p50_ms']:.3f} | "
                             f"{f['p50_min']:.3f}-{f['p50_max']:.3f} | {f['p99_ms']:.3f} | {f['mean_ms']:.3f} | "
                             f"{f['n']} |")
    lk = report.get("lookup")
    if lk:
        lines += ["", f"### The mixed load in-process, per request (load {lk['load_before']} / {lk['load_after']}; "
                  f"before = commit {lk['before'][:7]})", "",
                  "| code and sandbox | CPU us per request (median) | spread | vs before |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {r['variant']} | {r['us']:.1f} | {r['us_min']:.1f}-{r['us_max']:.1f} | {r['vs_before']:.3f} |"
                  for r in lk["rows"]]
        lines += ["", "`choose(scope)` + `sandboxes.get(name)` alone: " +
                  ", ".join(f"{k} {v:.2f} us" for k, v in lk["lookup_us"].items())]
    ld = report.get("load")
    if ld:
        lines += ["", f"### Mixed load (a GET status, b 50 projects, c POST variable, d 401 in turn), "
                  f"wrk -t1 -c8, {ld['runs']} runs of {ld['seconds']} s each, round robin "
                  f"(load {ld['load_before']} / {ld['load_after']})", "",
                  "| load | req/s | spread | p50 ms | p99 ms | errors | vs before | paired vs before | vs default "
                  "| server CPU us/request | spread | CPU vs before | CPU vs default |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in ld["rows"]:
            paired = r.get("paired_vs_before")
            lines.append(f"| {r['load']} | {r['rps']:.0f} | {r['rps_min']:.0f}-{r['rps_max']:.0f} | {r['p50_ms']:.2f} | "
                         f"{r['p99_ms']:.2f} | {r['errors']} | {r['vs_before']:.3f} | "
                         f"{min(paired):.3f}-{max(paired):.3f} (median {statistics.median(paired):.3f})" if paired else
                         f"| {r['load']} | {r['rps']:.0f} | {r['rps_min']:.0f}-{r['rps_max']:.0f} | {r['p50_ms']:.2f} | "
                         f"{r['p99_ms']:.2f} | {r['errors']} | {r['vs_before']:.3f} | -")
            lines[-1] += (f" | {r['vs_default']:.3f} | {r['cpu_us']:.1f} | {r['cpu_us_min']:.1f}-{r['cpu_us_max']:.1f} | "
                          f"{r['cpu_vs_before']:.3f} | {r['cpu_vs_default']:.3f} |")
    m = report.get("rss")
    if m:
        lines += ["", f"### Memory of idle sandboxes (load {m['load_before']} / {m['load_after']})", "",
                  f"RSS {m['rss_start_mib']} MiB with the default sandbox; {m['rss_1000_mib']} MiB after creating "
                  f"1,000 more ({m['per_sandbox_kib']} KiB each); {m['rss_1000_used_mib']} MiB after one request "
                  f"to each ({m['per_sandbox_used_kib']} KiB each); {m.get('rss_1000_asleep_mib', '-')} MiB once "
                  f"idle past --sleep-after ({m.get('asleep', '-')} asleep, {m.get('per_sandbox_asleep_kib', '-')} "
                  f"KiB each). Idle CPU: {m['idle_cpu_1']:.1%} with 1 sandbox, "
                  f"{m['idle_cpu_1001']:.1%} with 1,001. PUT p50/p99: first 100 {m['put_first_100']['p50_ms']:.3f}/"
                  f"{m['put_first_100']['p99_ms']:.3f} ms, last 100 {m['put_last_100']['p50_ms']:.3f}/"
                  f"{m['put_last_100']['p99_ms']:.3f} ms."]
    s = report.get("snapshots")
    if s:
        lines += ["", f"### Snapshot (freeze), restore (thaw), save (write + fsync) (load {s['load_before']} / "
                  f"{s['load_after']})", "",
                  "| resources | projects | bytes | freeze p50 / p99 ms | thaw p50 / p99 ms | write+fsync p50 ms | "
                  "freeze with journal ms (entries) |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for lv in s["levels"]:
            lines.append(f"| {lv['resources']:,} | {lv['projects']:,} | {lv['bytes']:,} | {lv['freeze']['p50_ms']:.3f} / "
                         f"{lv['freeze']['p99_ms']:.3f} | {lv['thaw']['p50_ms']:.3f} / {lv['thaw']['p99_ms']:.3f} | "
                         f"{lv['write_fsync']['p50_ms']:.3f} | {lv['freeze_with_journal_ms']:.3f} "
                         f"({lv['journal_entries']:,}) |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="create,lookup,load,rss,snapshots", help="parts, comma-separated")
    parser.add_argument("--inproc", help=argparse.SUPPRESS)
    parser.add_argument("--inproc-n", type=int, default=4000, help="requests per in-process round (default 4000)")
    parser.add_argument("--runs", type=int, default=5, help="wrk runs per load (default 5)")
    parser.add_argument("--seconds", type=int, default=3, help="seconds per wrk run (default 3)")
    parser.add_argument("--samples", type=int, default=200, help="creates and resets timed per round (default 200)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of create/reset timing (default 5)")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of idle CPU measured (default 5)")
    parser.add_argument("--levels", default="53,1000,100000", help="store sizes of the snapshot part")
    parser.add_argument("--before", help="commit to compare with (default: the one before 'Sandboxes:')")
    parser.add_argument("--port", type=int, default=0, help="first port (default: free ports chosen by the system)")
    parser.add_argument("--out", default="sandboxes", help="name of the result files in bench/results/")
    args = parser.parse_args()
    args.levels = [int(x) for x in args.levels.split(",")]
    parts = args.only.split(",")
    if "load" in parts and not run.shutil.which("wrk"):
        sys.exit("wrk is missing: install it with `sudo apt-get install -y wrk` (Debian/Ubuntu)")
    RESULTS.mkdir(exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count()}
    if args.inproc:
        return inproc(args.inproc, args.samples, args.rounds)
    for part, fn in (("create", create_reset), ("lookup", lookup), ("load", load), ("rss", rss),
                     ("snapshots", snapshots)):
        if part in parts:
            print(f"{part} (load average {load_avg()})", flush=True)
            report[part] = fn(args, args.port)
    text = markdown(report)
    (RESULTS / f"{args.out}.md").write_text(text)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=1) + "\n")
    print("\n" + text + f"\nwritten: bench/results/{args.out}.md, bench/results/{args.out}.json")


if __name__ == "__main__":
    main()
