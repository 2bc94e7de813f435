#!/usr/bin/env python3
"""What journaling one call costs the request path: `Pipeline.record` (the journal's step of every API call), in
process, for a create, a read and a refused call, with the mock's default settings.

    .venv/bin/python bench/journal_record.py                      # the checkout
    .venv/bin/python bench/journal_record.py --baseline REV       # and REV (a temporary git worktree), in turns

A real call of each kind goes through the pipeline once; its arguments to `Pipeline.record` are kept and the
step is timed again and again on them (a journal full of such calls, its blocks packed as they fill). Each line:
the median of the rounds, in microseconds per call. Compare the trees within one run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
CALLS = {
    "create": ("POST", f"/project/{PROJECT}/environmentVariable", b'{"key":"K_%d","value":"v"}', "mock-admin-token"),
    "read": ("GET", "/application/a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5/status", b"", "mock-admin-token"),
    "refused": ("GET", "/organization", b"", "nope"),
}
MEASURE = """
import json, statistics, sys, timeit
from mockserver.app import MockServer
from mockserver.api.pipeline import Pipeline
from mockserver.core.settings import Settings

calls, number, rounds = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
server = MockServer(Settings(rate_limit=10**9, rate_window=3600))
seen = []
real = Pipeline.record
Pipeline.record = staticmethod(lambda *args: (seen.append(args), real(*args))[1])
out = {}
for kind, (method, path, body, token) in calls.items():
    seen.clear()
    body = body.replace("%d", "0").encode()
    headers = [(b"host", b"mock"), (b"authorization", b"Token " + token.encode()),
               (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": headers}
    server.pipeline.direct(server.rt, scope, path, None, body)
    args = seen[-1]
    out[kind] = statistics.median(timeit.repeat(lambda: real(*args), number=number, repeat=rounds)) / number * 1e6
print(json.dumps(out))
"""


def measure(tree, number, rounds):
    done = subprocess.run([sys.executable, "-c", MEASURE, json.dumps({k: [m, p, b.decode(), t] for k, (m, p, b, t)
                                                                          in CALLS.items()}), str(number), str(rounds)],
                          cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", metavar="REV")
    parser.add_argument("--number", type=int, default=20000, help="calls journaled a round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--turns", type=int, default=3, help="runs of each tree, in turns")
    args = parser.parse_args()
    trees = [("checkout", ROOT)]
    if args.baseline:
        tree = Path(tempfile.mkdtemp(prefix="bench-journal-"))
        tree.rmdir()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), args.baseline], check=True,
                       capture_output=True)
        trees.insert(0, (args.baseline, tree))
    try:
        results = {label: [] for label, _ in trees}
        for _ in range(args.turns):
            for label, tree in trees:
                results[label].append(measure(tree, args.number, args.rounds))
    finally:
        for _, tree in trees[:-1]:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print("| tree | " + " | ".join(f"{kind} µs" for kind in CALLS) + " |")
    print("|---|" + "---:|" * len(CALLS))
    for label, runs in results.items():
        print(f"| {label} | " + " | ".join(f"{statistics.median(run[kind] for run in runs):.2f}" for kind in CALLS)
              + " |")


if __name__ == "__main__":
    main()
