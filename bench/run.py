#!/usr/bin/env python3
"""Benchmark of the mock server against a bare Starlette app (and optionally Stoplight Prism).

    python bench/run.py                 # throughput table (~2.5 minutes)
    python bench/run.py --with-prism    # add Prism 5.14.2 (installed into bench/.prism/ with npm)
    python bench/run.py --scale         # add start-up time, RSS over 1M requests, latency vs store size
    python bench/run.py --variants      # add a paired table: the mock vs itself with CORS off / access log on
    python bench/run.py --floors        # add the floors: the mock's own replies sent fixed (bench/floor_app.py)
    python bench/run.py --no-throughput --variants --tracing --out tracing   # what OpenTelemetry tracing costs

Every server is pinned to CPU 0 and wrk to CPU 1 (taskset); wrk runs 1 thread, 8 connections.
Results: a table on stdout, bench/results/latest.md and bench/results/latest.json.
Only the standard library is used here; the servers run from the project's venv.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
VENV_BIN = ROOT / ".venv" / "bin"
MOCK = str(VENV_BIN / "mockserver") if (VENV_BIN / "mockserver").exists() else shutil.which("mockserver")
PYTHON = str(Path(MOCK).parent / "python") if MOCK else sys.executable
PRISM_VERSION = "5.14.2"
PRISM = BENCH / ".prism" / "node_modules" / ".bin" / "prism"
RATE = "1000000000/3600"
TOKEN = {"Authorization": "Token mock-admin-token"}

ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
APP = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"
# name -> (wrk kind, path, expected non-2xx status)
REQUESTS = {
    "a GET status": ("get", f"/application/{APP}/status", None),
    "b GET list of 50 projects": ("get", f"/organization/{ORG}/project", None),
    "c POST variable (validated)": ("create_var", f"/project/{PROJECT}/environmentVariable", None),
    "d GET unauthenticated (401)": ("unauth", "/organization", 401),
}


# ------------------------------------------------------------------ processes and HTTP
def call(port, method, path, body=None, headers=TOKEN, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, data, {**headers, **({"Content-Type": "application/json"} if data else {})})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def allocator_of(port):
    """The memory allocator a mock runs under, as its health reply names it (None before it did)."""
    status, body = call(port, "GET", "/_mock/health", headers={})
    return json.loads(body).get("memory", {}).get("allocator") if status == 200 else None


def port_is_free(port):
    """Nothing listens on 127.0.0.1:port (else the figures would be another server's)."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def start(cmd, port, log, cwd=ROOT, env=None):
    """Start a server on CPU 0; return (process, seconds from start to the first answered request)."""
    if not port_is_free(port):
        sys.exit(f"port {port} is already in use: stop what listens there or pass --port")
    began = time.perf_counter()
    proc = subprocess.Popen(["taskset", "-c", "0", *cmd], stdout=log, stderr=log, cwd=cwd, env=env)
    while time.perf_counter() - began < 120:
        if proc.poll() is not None:
            sys.exit(f"server exited with {proc.returncode}: {' '.join(cmd)} (log: {log.name})")
        try:
            call(port, "GET", "/organization", headers={}, timeout=1)
            return proc, time.perf_counter() - began
        except OSError:
            time.sleep(0.01)
    stop(proc)
    sys.exit(f"server did not answer within 120 s: {' '.join(cmd)}")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_seconds(pid):
    """User + system CPU time of a process so far (/proc/<pid>/stat, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)


def wrk(port, kind, path, tag="0", stop_after=0, conns=8, secs=3, timeout=10):
    cmd = ["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{secs}s", f"--timeout={timeout}s",
           "-s", str(BENCH / "requests.lua"), f"http://127.0.0.1:{port}", "--", kind, path, tag, str(stop_after)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = []
    for line in proc.stdout:                  # "STOP": the Lua script has its count, so end the run
        out.append(line)
        if line.startswith("STOP"):
            proc.send_signal(signal.SIGINT)
    if proc.wait() != 0:
        sys.exit(f"wrk failed: {' '.join(cmd)}")
    result = json.loads(next(line[7:] for line in out if line.startswith("RESULT ")))
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


def errors_of(result, expected):
    bad = sum(n for status, n in result["statuses"].items() if not 200 <= int(status) < 300 and int(status) != expected)
    return bad + result["socket_errors"]


def checkout(rev):
    """("mock@<sha>", folder) of a commit checked out into a temporary git worktree."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True,
                         text=True, check=True).stdout.strip()
    tree = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    tree.rmdir()
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), sha], check=True,
                   capture_output=True)
    return f"mock@{sha[:7]}", tree


# ------------------------------------------------------------------ throughput
# name -> extra options of `mockserver serve` (--variants): what CORS, the access log and the allocator cost
VARIANTS = {"mock-cors-off": ["--cors-origins", "off"], "mock-log-text": ["--access-log"],
            "mock-log-json": ["--access-log", "--log-format", "json"],
            "mock-malloc": ["--allocator", "malloc"], "mock-pymalloc": ["--allocator", "pymalloc"]}
# name -> the OTEL_* environment of `mockserver serve` (--variants --tracing, in place of VARIANTS): what tracing
# costs. none: off by name (the path as shipped); unsampled: on, every span dropped by the sampler; console: on,
# every span printed (into the server's log file, bench/results/NAME.log.raw)
TRACING = {"mock-otel-none": {"OTEL_TRACES_EXPORTER": "none"},
           "mock-otel-unsampled": {"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "always_off"},
           "mock-otel-console": {"OTEL_TRACES_EXPORTER": "console"}}


def record_replies(port, path):
    """One reply of the mock to each request of REQUESTS, as bench/floor_app.py serves them: its status,
    its headers but Date and Content-Length (uvicorn and the app add those), its body."""
    replies = []
    for kind, target, _ in REQUESTS.values():
        method, body, headers = "GET", None, TOKEN
        if kind == "create_var":
            method, body = "POST", {"key": "K_floor_0", "value": "v"}
        elif kind == "unauth":
            headers = {}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, target, data, {**headers, **({"Content-Type": "application/json"} if data else {})})
            reply = conn.getresponse()
            replies.append({"method": method, "path": target, "authorized": bool(headers), "status": reply.status,
                            "headers": [(name.lower(), value) for name, value in reply.getheaders()
                                        if name.lower() not in ("date", "content-length")],
                            "body": reply.read().decode("utf-8")})
        finally:
            conn.close()
    path.write_text(json.dumps(replies, indent=1) + "\n")


def servers(with_prism, baseline=None, floors=None):
    """(name, command, working folder, environment) of each server to load, in turn. `floors`: the file the
    mock's replies are recorded into while it is measured (it comes first), then served by the floor apps."""
    yield "mock", [MOCK, "serve", "--port", "{port}", "--rate-limit", RATE], ROOT, None
    if baseline is not None:                  # the same venv, the package of another commit (PYTHONPATH)
        name, tree = baseline
        yield name, [PYTHON, "-m", "mockserver", "serve", "--port", "{port}", "--rate-limit", RATE], tree, \
            {**os.environ, "PYTHONPATH": str(tree)}
    yield "bare", [PYTHON, str(BENCH / "bare_app.py"), "--port", "{port}"], ROOT, None
    if floors is not None:
        for kind in ("raw", "starlette"):
            yield f"floor-{kind}", [PYTHON, str(BENCH / "floor_app.py"), "--replies", str(floors), "--kind", kind,
                                    "--port", "{port}"], ROOT, None
        yield "floor-serve", [PYTHON, str(BENCH / "floor_app.py"), "--replies", str(floors), "--kind", "raw",
                              "--serve-protocol", "--port", "{port}"], ROOT, None
        yield "floor-bare", [PYTHON, str(BENCH / "floor_app.py"), "--replies", str(floors), "--kind", "bare",
                             "--port", "{port}"], ROOT, None
        yield "floor-lean", [PYTHON, str(BENCH / "floor_app.py"), "--replies", str(floors), "--kind", "lean",
                             "--port", "{port}"], ROOT, None
    if with_prism:
        if not PRISM.exists():
            print(f"installing @stoplight/prism-cli@{PRISM_VERSION} into bench/.prism/ ...", flush=True)
            subprocess.run(["npm", "install", "--prefix", str(BENCH / ".prism"), "--no-audit", "--no-fund",
                            "--save-exact", f"@stoplight/prism-cli@{PRISM_VERSION}"], check=True)
        yield "prism", [str(PRISM), "mock", "-h", "127.0.0.1", "-p", "{port}", "--errors=false", "-v", "silent",
                        str(ROOT / "mockserver" / "document" / "openapi.yaml")], ROOT, None


def throughput(args, port, baseline=None):
    """Every server started at once, each on its own port (port, port + 1, ...) and paused (SIGSTOP) while
    another is loaded; then run after run, request after request, each server in turn. The machine's drift
    then hits every server alike: the ratios of a row compare figures taken seconds apart, not minutes."""
    rows = []
    floors = RESULTS / "floor-replies.raw" if args.floors else None
    procs, allocators = {}, {}
    try:
        for n, (name, cmd, cwd, env) in enumerate(servers(args.with_prism, baseline, floors)):
            with open(RESULTS / f"{name}.log.raw", "w") as log:
                proc, _ = start([part.format(port=port + n) for part in cmd], port + n, log, cwd, env)
            procs[name] = (proc, port + n)
            allocators[name] = allocator_of(port + n) if name.startswith("mock") else None
            for i in range(48):                   # the fixtures have 2 projects: make it 50
                call(port + n, "POST", f"/organization/{ORG}/project", {"name": f"bench-{i}"})
            if floors is not None and name == "mock":   # before the floor apps start: they serve these
                record_replies(port + n, floors)
            for kind, path, _ in REQUESTS.values():  # warm-up
                wrk(port + n, kind, path, tag="warm", secs=1)
            proc.send_signal(signal.SIGSTOP)
        runs = {(name, request): [] for name in procs for request in REQUESTS}
        for rep in range(args.runs):
            for request, (kind, path, _) in REQUESTS.items():
                for name, (proc, server_port) in procs.items():
                    proc.send_signal(signal.SIGCONT)
                    before = cpu_seconds(proc.pid)
                    result = wrk(server_port, kind, path, tag=str(rep), secs=args.seconds)
                    result["cpu_us"] = (cpu_seconds(proc.pid) - before) / max(1, result["requests"]) * 1e6
                    proc.send_signal(signal.SIGSTOP)
                    runs[name, request].append(result)
    finally:
        for proc, _ in procs.values():
            proc.send_signal(signal.SIGCONT)
            stop(proc)
    for (name, request), results in runs.items():
        rps = [r["rps"] for r in results]
        rows.append({"server": name, "allocator": allocators[name], "request": request, "rps": statistics.median(rps),
                     "rps_min": min(rps), "rps_max": max(rps),
                     "p50_ms": statistics.median(r["p50_us"] for r in results) / 1000,
                     "p99_ms": statistics.median(r["p99_us"] for r in results) / 1000,
                     "errors": sum(errors_of(r, REQUESTS[request][2]) for r in results),
                     "requests": sum(r["requests"] for r in results), "runs": results,
                     "cpu_us": statistics.median(r["cpu_us"] for r in results)})
        print(f"  {name:6} {request:28} {rows[-1]['rps']:9.0f} req/s  {rows[-1]['cpu_us']:.1f} us CPU/request",
              flush=True)
    bare = {row["request"]: row for row in rows if row["server"] == "bare"}
    for row in rows:
        row["vs_bare"] = row["rps"] / bare[row["request"]]["rps"]
        # the same ratio from CPU time: what the throughput ratio is when each server has a core of its own,
        # which stays readable when other work shares the machine (req/s then moves with the neighbours)
        row["vs_bare_cpu"] = bare[row["request"]]["cpu_us"] / row["cpu_us"] if row["cpu_us"] else 0.0
    return rows


def variants(args, port):
    """The mock as it ships and its VARIANTS, all started at once (idle ones cost nothing) and loaded in
    turn, run after run, so that the machine's drift hits every one alike: a paired comparison."""
    table = {name: [] for name in TRACING} if args.tracing else VARIANTS
    names = ["mock", *table]
    procs = {}
    try:
        for n, name in enumerate(names):
            with open(RESULTS / f"{name}.log.raw", "w") as log:   # the access log goes to this file
                procs[name] = start([MOCK, "serve", "--port", str(port + n), "--rate-limit", RATE,
                                     *table.get(name, [])], port + n, log,
                                    env={**os.environ, **TRACING[name]} if name in TRACING else None)[0]
        for n in range(len(names)):
            for i in range(48):                   # the fixtures have 2 projects: make it 50
                call(port + n, "POST", f"/organization/{ORG}/project", {"name": f"bench-{i}"})
            for kind, path, _ in REQUESTS.values():
                wrk(port + n, kind, path, tag=f"warm{n}", secs=1)
        runs = {(name, request): [] for name in names for request in REQUESTS}
        for rep in range(args.runs):
            for request, (kind, path, _) in REQUESTS.items():
                for n, name in enumerate(names):
                    before = cpu_seconds(procs[name].pid)
                    result = wrk(port + n, kind, path, tag=f"v{n}_{rep}", secs=args.seconds)
                    result["cpu_us"] = (cpu_seconds(procs[name].pid) - before) / result["requests"] * 1e6
                    runs[name, request].append(result)
        rows = []
        for (name, request), results in runs.items():
            rps = [r["rps"] for r in results]
            rows.append({"server": name, "request": request, "rps": statistics.median(rps), "rps_min": min(rps),
                         "rps_max": max(rps), "p50_ms": statistics.median(r["p50_us"] for r in results) / 1000,
                         "errors": sum(errors_of(r, REQUESTS[request][2]) for r in results),
                         "cpu_us": statistics.median(r["cpu_us"] for r in results),
                         # per run, this server against the mock as it ships, measured right before it
                         "vs_mock": statistics.median(r["rps"] / base["rps"]
                                                      for r, base in zip(results, runs["mock", request]))})
            print(f"  {name:14} {request:28} {rows[-1]['rps']:9.0f} req/s  x{rows[-1]['vs_mock']:.3f}  "
                  f"{rows[-1]['cpu_us']:.1f} us CPU/request", flush=True)
        for row in rows:
            base = next(r for r in rows if r["server"] == "mock" and r["request"] == row["request"])
            row["cpu_vs_mock"] = row["cpu_us"] / base["cpu_us"]
        return rows
    finally:
        for proc in procs.values():
            stop(proc)


# ------------------------------------------------------------------ scale
# Store levels: (projects in the default organization, variables spread over them).
LEVELS = ((10, 0), (1_000, 0), (100_000, 0))


def project_ids(port):
    return [p["id"] for p in json.loads(call(port, "GET", f"/organization/{ORG}/project")[1])["results"]]


def store_size(port):
    return sum(json.loads(call(port, "GET", "/_mock/state")[1])["counts"].values())


def fill(port, projects, variables, tag):
    """Create projects (wrk for many, plain HTTP for few), then variables spread over all projects."""
    for attempt in range(3):                  # a POST in flight when wrk stops may be lost: top up
        missing = projects - len(project_ids(port))
        if missing > 2000:
            wrk(port, "create_project", f"/organization/{ORG}/project", tag=f"{tag}_{attempt}", stop_after=missing,
                secs=900)
        for n in range(missing if missing <= 2000 else 0):
            call(port, "POST", f"/organization/{ORG}/project", {"name": f"p_{tag}_{attempt}_{n}"})
    if variables:
        ids = RESULTS / "project-ids.raw"
        ids.write_text("\n".join(project_ids(port)) + "\n")
        wrk(port, "spread_var", str(ids), tag=tag, stop_after=variables, secs=900)


def scale(port):
    out = {"startup_s": [], "rss_mib": {}, "latency": []}
    cmd = [MOCK, "serve", "--port", str(port)]
    with open(RESULTS / "scale.log.raw", "w") as log:
        for _ in range(5):
            proc, seconds = start(cmd, port, log)
            stop(proc)
            out["startup_s"].append(round(seconds, 3))
        print(f"  start-up: median {statistics.median(out['startup_s']):.2f} s {out['startup_s']}", flush=True)

        proc, _ = start(cmd + ["--rate-limit", RATE], port, log)
        try:
            out["rss_mib"]["0"] = rss_mib(proc.pid)
            done = 0
            for target in (250_000, 500_000, 1_000_000):
                done += wrk(port, "get", f"/application/{APP}/status", stop_after=target - done, secs=900)["requests"]
                out["rss_mib"][str(target)] = rss_mib(proc.pid)
                print(f"  RSS after {done} requests: {out['rss_mib'][str(target)]} MiB", flush=True)
        finally:
            stop(proc)

        proc, _ = start(cmd + ["--rate-limit", RATE], port, log)
        try:
            for level, (projects, variables) in enumerate(LEVELS):
                began = time.perf_counter()
                fill(port, projects, variables - sum(v for _, v in LEVELS[:level]), tag=str(level))
                ids, size = project_ids(port), store_size(port)
                print(f"  store: {size} resources, {len(ids)} projects (filled in "
                      f"{time.perf_counter() - began:.0f} s)", flush=True)
                for what, path in (("GET /project/{id} (one resource)", f"/project/{ids[len(ids) // 2]}"),
                                   ("GET project list (grows with the store)", f"/organization/{ORG}/project"),
                                   ("GET variables of the fixture app (stays small)",
                                    f"/application/{APP}/environmentVariable")):
                    r = wrk(port, "get", path, conns=1, secs=3, timeout=60)
                    out["latency"].append({"store": size, "projects": len(ids), "request": what,
                                           "p50_ms": r["p50_us"] / 1000, "p99_ms": r["p99_us"] / 1000,
                                           "requests": r["requests"], "errors": errors_of(r, None)})
                    print(f"    {what:48} p50 {r['p50_us'] / 1000:8.2f} ms", flush=True)
        finally:
            stop(proc)
    return out


# ------------------------------------------------------------------ report
def server_label(row):
    """A server's name in a table, with the allocator it ran under when it said."""
    return f"{row['server']} ({row['allocator']})" if row.get("allocator") else row["server"]


def markdown(report):
    lines = [f"Benchmark of {report['date']} on {report['cpus']} CPUs (load average {report['load_before']:.1f} before, "
             f"{report['load_after']:.1f} after). Server on CPU 0, wrk on CPU 1; wrk -t1 -c8, {report['runs']} runs of "
             f"{report['seconds']} s per request, median shown, req/s spread is min-max of the runs. The servers run "
             "at once and are loaded in turn (each paused while another is loaded), run by run. The mock runs "
             f"with `--rate-limit {RATE}` so that the default 1000/h limit does not turn replies into 429s; "
             "its journal keeps its default bound. Errors: non-2xx replies (except 401 for d) and socket errors.", ""]
    if report.get("throughput"):
        lines += ["| server | request | req/s | spread (min-max) | p50 ms | p99 ms | errors | vs bare | CPU µs/req | "
                  "vs bare by CPU |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {server_label(r)} | {r['request']} | {r['rps']:.0f} | {r['rps_min']:.0f}-{r['rps_max']:.0f} | "
                  f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['errors']} | {r['vs_bare']:.2f} | "
                  f"{r.get('cpu_us', 0):.1f} | {r.get('vs_bare_cpu', 0):.2f} |"
                  for r in report["throughput"]]
        lines += ["", "vs bare by CPU: the bare app's server CPU time per request over this server's (user + system "
                  "time of the server process, /proc/<pid>/stat, over the requests it answered): the throughput "
                  "ratio when each has a core to itself."]
        if any(r["server"].startswith("floor") for r in report["throughput"]):
            lines += ["", "floor-raw and floor-starlette (`--floors`, bench/floor_app.py) send the mock's own replies "
                      "(status, headers, body, recorded from it in this run) fixed, as a plain ASGI app and as a "
                      "Starlette route, doing none of the mock's work: what those replies cost to send on this stack. "
                      "floor-serve is floor-raw under the protocol `mockserver serve` runs instead of uvicorn's "
                      "own (process/connections.py): the mock less floor-serve is the mock's own work. floor-bare sends the "
                      "same bytes with no ASGI server (an asyncio protocol and httptools): floor-serve less "
                      "floor-bare is what the ASGI server's own steps cost. floor-lean runs floor-raw's app under a "
                      "minimal ASGI server (a scope, a task, one write; no limits or flow control): what ASGI "
                      "itself costs above floor-bare."]
    if report.get("variants"):
        lines += ["", "Paired: the mock as it ships and its variants, started together and loaded in turn "
                  "(req/s vs mock: median over the runs of the variant's req/s over the mock's, run by run; "
                  "CPU/request: the server process's user+system time over the requests it answered, median "
                  "of the runs):", "",
                  "| server | request | req/s | spread (min-max) | req/s vs mock | CPU µs/request | CPU vs mock "
                  "| errors |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {server_label(r)} | {r['request']} | {r['rps']:.0f} | {r['rps_min']:.0f}-{r['rps_max']:.0f} | "
                  f"{r['vs_mock']:.3f} | {r['cpu_us']:.1f} | {r['cpu_vs_mock']:.3f} | {r['errors']} |"
                  for r in report["variants"]]
    s = report.get("scale")
    if s:
        lines += ["", f"Start-up of `mockserver serve` to the first answered request: median "
                  f"{statistics.median(s['startup_s']):.2f} s (runs: {s['startup_s']}).", "",
                  "| requests served (GET status) | RSS MiB |", "| ---: | ---: |"]
        lines += [f"| {int(n):,} | {mib} |" for n, mib in s["rss_mib"].items()]
        lines += ["", "Latency with 1 connection (3 s) as the store grows (store: resources counted by "
                  "/_mock/state; projects: in the default organization):", "",
                  "| store | projects | request | p50 ms | p99 ms | requests | errors |",
                  "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {r['store']:,} | {r['projects']:,} | {r['request']} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                  f"{r['requests']} | {r['errors']} |" for r in s["latency"]]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--with-prism", action="store_true", help=f"also load Stoplight Prism {PRISM_VERSION}")
    parser.add_argument("--scale", action="store_true", help="add start-up, memory and store-size figures (~3 min)")
    parser.add_argument("--no-throughput", action="store_true", help="skip the throughput table")
    parser.add_argument("--variants", action="store_true",
                        help="add a paired table: the mock vs itself with CORS off and with the access log on "
                             "(text, json; written to a file)")
    parser.add_argument("--tracing", action="store_true",
                        help="with --variants: the variants are tracing's (TRACING: off by name, on unsampled, on "
                             "with every span printed) in place of CORS, access log and allocator")
    parser.add_argument("--out", default="latest", help="name of the result files (default latest: latest.md); "
                        "another name that exists is refused unless --force")
    parser.add_argument("--force", action="store_true", help="replace the result files of --out if they exist")
    parser.add_argument("--floors", action="store_true",
                        help="also load apps that send the mock's own replies fixed, doing none of its work "
                             "(bench/floor_app.py: plain ASGI and Starlette under uvicorn's protocol, plain ASGI "
                             "under serve's and under a minimal ASGI server; and no ASGI server at all): what the replies alone cost")
    parser.add_argument("--runs", type=int, default=5, help="runs per server and request (default 5)")
    parser.add_argument("--seconds", type=int, default=3, help="seconds per run (default 3)")
    parser.add_argument("--port", type=int, default=18080)
    parser.add_argument("--baseline", metavar="REV", help="also load the mock of this commit (checked out into a "
                        "temporary git worktree, run with this venv), in the same run: before and after")
    args = parser.parse_args()
    taken = [path for path in (RESULTS / f"{args.out}.md", RESULTS / f"{args.out}.json") if path.exists()]
    if taken and args.out != "latest" and not args.force:   # a named result is evidence the docs may cite
        sys.exit(f"{taken[0]} exists: name this run with another --out, or pass --force to replace it")
    if not shutil.which("wrk"):
        sys.exit("wrk is missing: install it with `sudo apt-get install -y wrk` (Debian/Ubuntu)")
    if not MOCK:
        sys.exit("mockserver is missing: `python -m venv .venv && .venv/bin/pip install -e .`")
    RESULTS.mkdir(exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "runs": args.runs,
              "seconds": args.seconds, "rate_limit": RATE, "load_before": os.getloadavg()[0]}
    print(f"mock started with --rate-limit {RATE} (the default 1000/h would answer 429 under load)", flush=True)
    if not args.no_throughput:
        baseline = checkout(args.baseline) if args.baseline else None
        try:
            report["throughput"] = throughput(args, args.port, baseline)
        finally:
            if baseline is not None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline[1])], check=False)
    if args.variants:
        report["variants"] = variants(args, args.port)
    if args.scale:
        report["scale"] = scale(args.port)
    report["load_after"] = os.getloadavg()[0]
    text = markdown(report)
    (RESULTS / f"{args.out}.md").write_text(text)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=1) + "\n")
    print("\n" + text + f"\nwritten: bench/results/{args.out}.md, bench/results/{args.out}.json")


if __name__ == "__main__":
    main()
