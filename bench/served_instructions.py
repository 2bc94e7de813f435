#!/usr/bin/env python3
"""Instructions per request of a real server over a real socket, counted by valgrind: served, without the noise.

    python bench/served_instructions.py                      # the checkout and floor-raw, the four requests
    python bench/served_instructions.py --baseline REV       # and the mock of REV, in the same run
    python bench/served_instructions.py --kinds 401,status --jobs 2

Each figure starts the server (`mockserver serve`, or bench/floor_app.py's plain ASGI app under uvicorn's own
protocol sending the mock's replies) under `valgrind --tool=callgrind` twice. A client in another process, on one
kept-alive connection, sends the requests of bench/served_inprocess.py (the same bytes; the mock first gets 48
more projects so that the organization holds 50), 300 to warm up, then --small or --large more; the server is
stopped and its instructions counted. (large - small) / (large - small requests): start-up, warm-up and stop
cancel out. The mock runs under the allocator `serve` picks (its environment set beforehand, so it does not
restart itself under valgrind).

Why both this and bench/instructions.py: that one feeds the protocol in-process and turns the event loop once per
request only when the request made a task, so a change that skips the task looks cheaper there than it is
served (a served request turns the loop for its socket anyway). Here the loop, uvloop's socket and the system
calls' user side are the real ones. Kernel time is not counted; `strace -c` counts the system calls. It needs
valgrind (Debian's package). One figure takes about a minute. Results: a table on stdout,
bench/results/<out>.md and .json.
"""
import argparse
import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
NAMES = {"status": "a GET status", "list50": "b GET list of 50 projects", "post": "c POST variable (validated)",
         "401": "d GET unauthenticated (401)"}
WARM = 300
sys.path.insert(0, str(BENCH))
from run import checkout  # noqa: E402  (bench/run.py: a commit into a temporary worktree)
from served_inprocess import request  # noqa: E402  (the requests' bytes)

sys.path.insert(0, str(ROOT))
from mockserver.process import allocator  # noqa: E402


# ---------------------------------------------------------------- the client (its own process)
def exchange(sock, data):
    """Send one request, read its reply whole (Content-Length); its status."""
    sock.sendall(data)
    got = b""
    while b"\r\n\r\n" not in got:
        got += received(sock)
    head, _, rest = got.partition(b"\r\n\r\n")
    found = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    length = int(found.group(1)) if found else 0
    while len(rest) < length:
        rest += received(sock)
    return int(head[9:12])


def received(sock):
    """The next bytes of the reply; an error, not a wait for ever, when the server closed the connection."""
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the server closed the connection in the middle of a reply")
    return chunk


def client(port, kind, n, fill):
    sock = socket.create_connection(("127.0.0.1", port))
    for _ in range(fill):
        exchange(sock, request("project"))
    statuses = {exchange(sock, request(kind)) for _ in range(WARM + n)}
    print(json.dumps(sorted(statuses)))


# ---------------------------------------------------------------- one count
def wait_listening(port, process, seconds=300):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server ended before it listened (exit {process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("the server did not listen in time")


def count(command, cwd, env, port, kind, n, fill):
    """Instructions of one served run of n requests (after the fill and the warm-up), and the statuses seen."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        server = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                   *[part.replace("{port}", str(port)) for part in command]],
                                  cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listening(port, server)
            done = subprocess.run([PYTHON, __file__, "client", str(port), kind, str(n), str(fill)],
                                  capture_output=True, text=True, check=True, timeout=1800)
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=300)
        summary = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        if summary is None:
            raise RuntimeError(f"callgrind wrote no total for {command}")
        return int(summary.group(1)), json.loads(done.stdout)


def per_request(server, kind, small, large, port):
    name, command, cwd, env, fill = server
    few, statuses = count(command, cwd, env, port, kind, small, fill)
    many, more = count(command, cwd, env, port + 1, kind, large, fill)
    return {"server": name, "kind": kind, "instructions": round((many - few) / (large - small)),
            "statuses": sorted(set(statuses) | set(more))}


# ---------------------------------------------------------------- the servers
def servers(baseline, replies):
    """(name, command, folder, environment, projects to add first) of each server; `baseline`: (name, folder)."""
    fixed = {**os.environ, "PYTHONHASHSEED": "0"}      # the same hashes, so the same dict layouts, every run
    environ = allocator.environment("auto", fixed) or fixed
    mock = [PYTHON, "-m", "mockserver", "serve", "--port", "{port}", "--rate-limit", "1000000000/3600"]
    yield "mock", mock, ROOT, environ, 48
    if baseline:
        yield baseline[0], mock, baseline[1], environ, 48
    yield "floor-raw", [PYTHON, str(BENCH / "floor_app.py"), "--replies", str(replies), "--kind", "raw",
                        "--port", "{port}"], ROOT, fixed, 0


def table(rows, started, small, large):
    floors = {row["kind"]: row["instructions"] for row in rows if row["server"] == "floor-raw"}
    lines = [f"Instructions per request, served over a socket (bench/served_instructions.py), {started}: valgrind "
             f"callgrind, ({large} - {small} requests) on one kept-alive connection after {WARM} to warm up.", "",
             "| server | request | instructions | vs floor-raw | statuses |", "| --- | --- | ---: | ---: | --- |"]
    for kind in NAMES:
        for row in (row for row in rows if row["kind"] == kind):
            floor = floors.get(kind)
            ratio = f"{row['instructions'] / floor:.2f}" if floor else "-"
            lines.append(f"| {row['server']} | {NAMES[kind]} | {row['instructions']:,} | {ratio} | "
                         f"{', '.join(map(str, row['statuses']))} |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        client(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", metavar="REV", help="also count the mock of this commit")
    parser.add_argument("--kinds", default=",".join(NAMES), help="requests to count (default: all four)")
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=1200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="valgrind runs at once")
    parser.add_argument("--port", type=int, default=8300, help="first port (each run takes its own)")
    parser.add_argument("--out", default="served-instructions", help="name of the result files")
    args = parser.parse_args()
    kinds = [kind for kind in args.kinds.split(",") if kind]
    if unknown := set(kinds) - set(NAMES):
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))}")
    started = time.strftime("%Y-%m-%d %H:%M")
    baseline = checkout(args.baseline) if args.baseline else None
    try:
        rows = count_all(args, kinds, baseline)
    finally:
        if baseline:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline[1])], check=False)
    text = table(rows, started, args.small, args.large)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.md").write_text(text)
    (RESULTS / f"{args.out}.json").write_text(json.dumps({"started": started, "rows": rows}, indent=1) + "\n")


def count_all(args, kinds, baseline):
    """Every server's count of every kind, `args.jobs` at once."""
    with tempfile.TemporaryDirectory() as folder:
        replies = Path(folder) / "replies.json"
        subprocess.run([PYTHON, str(BENCH / "served_inprocess.py"), "record", str(replies)], cwd=ROOT, check=True)
        jobs = [(server, kind) for server in servers(baseline, replies) for kind in kinds]

        def one(number):
            server, kind = jobs[number]
            return per_request(server, kind, args.small, args.large, args.port + 2 * number)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            return list(pool.map(one, range(len(jobs))))


if __name__ == "__main__":
    main()
