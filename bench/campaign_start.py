#!/usr/bin/env python3
"""What a fault campaign pays the mock for each run: the time from starting `mockserver serve --port 0` to its
first answered request, and the time a harness waits for each test's sandbox (`PUT /_mock/sandboxes/{name}`
with `{"clock": "manual"}`, over HTTP).

    .venv/bin/python bench/campaign_start.py [--starts 10] [--sandboxes 300] [--baseline REV]

Sandboxes are made at a test's pace (one every 20 ms: the mock's background loop has time between two) and back
to back (every one copied while the client waits). Beside them, what is not the mock's making of a sandbox: the
round trip of `GET /_mock/health` from the same client, paced and back to back (httpx, the loopback and, paced,
an idle core waking up), and the server's own CPU time per sandbox made back to back (user + system time of its
process, /proc). With `--baseline REV`, that commit (a temporary git worktree, run with this venv) is measured
in the same run, in turns with the checkout. Figures: p50 and p90 of the starts and of the creations. Results:
stdout and bench/results/campaign_start.md.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
START_LINE = "mockserver "


def start(tree, extra=()):
    """(process, url, seconds from the spawn to the first answered request)."""
    began = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", "0", "--clock", "manual",
                                *extra], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = process.stderr.readline()
    url = line.split(" on ", 1)[1].split(":", 2)
    url = f"{url[0]}:{url[1]}:{url[2].split(':')[0]}"
    while True:
        try:
            if httpx.get(f"{url}/_mock/health", timeout=1).status_code == 200:
                return process, url, time.perf_counter() - began
        except httpx.HTTPError:
            pass
        time.sleep(0.002)


def stop(process):
    process.terminate()
    process.wait(30)


def cpu_seconds(pid):
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def round_trips(url, count, pace):
    took = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for _ in range(count):
            began = time.perf_counter()
            assert http.get("/_mock/health").status_code == 200
            took.append(time.perf_counter() - began)
            if pace:
                time.sleep(pace)
    return took[10:]


def creations(url, count, pace):
    took = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for index in range(count):
            began = time.perf_counter()
            reply = http.put(f"/_mock/sandboxes/bench-{pace}-{index}", json={"clock": "manual"})
            took.append(time.perf_counter() - began)
            assert reply.status_code in (200, 201), reply.text
            if pace:
                time.sleep(pace)
    return took[10:]


def quantiles(values):
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.9)]


def measure(tree, args):
    readies = []
    for _ in range(args.starts):
        process, _, ready = start(tree)
        readies.append(ready)
        stop(process)
    process, url, _ = start(tree)
    try:
        paced = creations(url, args.sandboxes, 0.02)
        paced_trips = round_trips(url, args.sandboxes, 0.02)
        trips = round_trips(url, args.sandboxes, 0)
        before = cpu_seconds(process.pid)
        back = creations(url, args.sandboxes, 0)
        cpu = (cpu_seconds(process.pid) - before) / args.sandboxes
    finally:
        stop(process)
    return {"ready": quantiles(readies), "paced": quantiles(paced), "back to back": quantiles(back),
            "round trip": quantiles(trips), "paced round trip": quantiles(paced_trips), "cpu": cpu}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--sandboxes", type=int, default=300)
    parser.add_argument("--baseline", metavar="REV")
    args = parser.parse_args()
    trees = [("checkout", ROOT)]
    if args.baseline:
        tree = Path(tempfile.mkdtemp(prefix="bench-start-"))
        tree.rmdir()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), args.baseline],
                       check=True, capture_output=True)
        trees.insert(0, (args.baseline, tree))
    try:
        rows = [(label, measure(tree, args)) for label, tree in trees]
    finally:
        for _, tree in trees[:-1]:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    lines = [f"bench/campaign_start.py, {time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}: "
             f"{args.starts} starts, {args.sandboxes} sandboxes a way", "",
             "| tree | ready p50 s | ready p90 s | sandbox p50 ms (paced) | p90 | sandbox p50 ms (back to back) | p90 "
             "| health p50 ms (paced) | health p50 ms (back to back) | server CPU ms a sandbox |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, found in rows:
        lines.append(f"| {label} | {found['ready'][0]:.3f} | {found['ready'][1]:.3f} | "
                     f"{found['paced'][0] * 1000:.2f} | {found['paced'][1] * 1000:.2f} | "
                     f"{found['back to back'][0] * 1000:.2f} | {found['back to back'][1] * 1000:.2f} | "
                     f"{found['paced round trip'][0] * 1000:.2f} | {found['round trip'][0] * 1000:.2f} | "
                     f"{found['cpu'] * 1000:.2f} |")
    print("\n".join(lines))
    (RESULTS / "campaign_start.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
