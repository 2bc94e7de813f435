#!/usr/bin/env python3
"""Instructions per request on the served path, counted by valgrind: the figure this machine's noise cannot move.

    python bench/instructions.py                     # the checkout and the floor, the four requests (~6 minutes)
    python bench/instructions.py --baseline REV      # and the mock of REV (checked out into a temporary folder)
    python bench/instructions.py --kinds 401,status --jobs 2

Each figure runs `bench/served_inprocess.py` (uvicorn's protocol as `mockserver serve` runs it, a transport
without a socket, the app) under `valgrind --tool=callgrind` twice, with --small and --large requests after the
same warm-up, and divides the difference of the instructions counted by the difference of requests: start-up,
warm-up and exit cancel out. The floor is bench/floor_app.py's plain ASGI app sending the mock's own replies
(recorded from the checkout) under uvicorn's own protocol: what the replies cost to parse and write, in-process.

What it leaves out: the system calls and the event loop's waits of a real socket (the same for every server,
so a served ratio to the floor is smaller than the ratio here), and the CPU's caches and clock. It needs
valgrind (Debian's package). Results: a table on stdout, bench/results/instructions.md and .json.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
DRIVER = BENCH / "served_inprocess.py"
NAMES = {"status": "a GET status", "list50": "b GET list of 50 projects", "post": "c POST variable (validated)",
         "401": "d GET unauthenticated (401)"}
sys.path.insert(0, str(BENCH))
from run import checkout  # noqa: E402  (bench/run.py: a commit into a temporary worktree)


def count(args, tree, env_extra=()):
    """Instructions valgrind counted for one run of the driver (and its JSON line)."""
    env = {**os.environ, "PYTHONPATH": str(tree), **dict(env_extra)}
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", PYTHON, str(DRIVER),
                           *args], capture_output=True, text=True, env=env, cwd=tree)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        sys.exit(f"valgrind run failed ({' '.join(args)}):\n{proc.stderr[-2000:]}")
    return int(found.group(1)), json.loads(proc.stdout.strip().splitlines()[-1])


def per_request(app, kind, tree, small, large, replies=None, extra=()):
    extra = [*(["--replies", str(replies)] if replies else []), *extra]
    low, _ = count([app, kind, str(small), *extra], tree)
    high, line = count([app, kind, str(large), *extra], tree)
    return {"instructions": round((high - low) / (large - small)), "statuses": line["statuses"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", metavar="REV", help="also count the mock of this commit")
    parser.add_argument("--kinds", default=",".join(NAMES), help="requests to count (default: all four)")
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=1500)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="valgrind runs at once")
    parser.add_argument("--out", default="instructions", help="name of the result files")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in NAMES]
    if unknown:
        sys.exit(f"unknown kind(s) {', '.join(unknown)}: use {', '.join(NAMES)}")
    trees = [("mock", ROOT)]
    if args.baseline:
        trees.append(checkout(args.baseline))
    replies = Path(tempfile.mkdtemp(prefix="bench-instructions-")) / "replies.json"
    subprocess.run([PYTHON, str(DRIVER), "record", str(replies)], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    began = time.time()
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for kind in kinds:
            jobs["floor-raw", kind] = pool.submit(per_request, "floor", kind, ROOT, args.small, args.large, replies)
            for name, tree in trees:
                jobs[name, kind] = pool.submit(per_request, "mock", kind, tree, args.small, args.large)
    results = {key: job.result() for key, job in jobs.items()}
    for _, tree in trees[1:]:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
    rows = []
    for kind in kinds:
        floor = results["floor-raw", kind]["instructions"]
        for name in ["floor-raw", *(name for name, _ in trees)]:
            found = results[name, kind]
            rows.append({"server": name, "request": NAMES[kind], "instructions": found["instructions"],
                         "vs_floor": round(found["instructions"] / floor, 2), "statuses": found["statuses"]})
    report = {"when": time.strftime("%Y-%m-%d %H:%M", time.localtime(began)), "small": args.small,
              "large": args.large, "baseline": args.baseline, "rows": rows}
    lines = [f"Instructions per request, served path in-process (bench/instructions.py), {report['when']}: "
             f"valgrind callgrind, ({args.large} - {args.small} requests) after the same warm-up.", "",
             "| server | request | instructions | vs floor-raw | statuses |", "| --- | --- | ---: | ---: | --- |"]
    lines += [f"| {row['server']} | {row['request']} | {row['instructions']:,} | {row['vs_floor']:.2f} | "
              f"{', '.join(map(str, row['statuses']))} |" for row in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.md").write_text(text)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
