#!/usr/bin/env python3
"""What a deploy of a repository the mock has never seen costs, next to a variable create, in-process.

    .venv/bin/python bench/deploy_new_repo.py                          # this checkout only
    .venv/bin/python bench/deploy_new_repo.py --before HEAD            # and HEAD, in the same run
    .venv/bin/python bench/deploy_new_repo.py --tree /tmp/before       # and other checkouts (--tree again)

Each checkout runs in a child process (its `mockserver` first on PYTHONPATH, this venv), children of the
checkouts taken in turn for --rounds rounds. A child builds one `MockServer` (manual clock, rate limit off),
warms up, then makes --calls calls of each kind below, the kinds in turn, and reports per kind the p50 of
the wall time and of the process's CPU time of one call through the whole ASGI application:

- `POST /project/{id}/environmentVariable` with a new key (the yardstick);
- `POST /application/{id}/deploy` of an application created (untimed) on a repository never seen before;
- the same for an application on a repository deployed before (a second application on it);
- `GET /job/{id}/commit?page=2&page_size=20` of a job created (untimed) on a repository never seen before.

After each deploy the clock moves on 600 s (untimed), so queues stay empty. The table gives, per checkout and
kind, the median of the rounds' p50s, and the ratio of a new repository's deploy to a variable create.
"""

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"       # the default fixtures' project and environment
ENV = "e4a6c8b0-2d4f-4a6c-8e0b-2d4f6a8c0e84"
KINDS = ("variable create", "deploy, new repository", "deploy, repository seen", "commits page 2, new repository")
WARM_UP = 10


async def _asgi(server, method, path, body=None, query=b""):
    """One call through the ASGI application: (status, decoded JSON body or None)."""
    data = json.dumps(body).encode() if body is not None else b""
    scope = {"type": "http", "http_version": "1.1", "method": method, "scheme": "http", "path": path,
             "raw_path": path.encode(), "query_string": query, "root_path": "",
             "headers": [(b"host", b"mock"), (b"authorization", b"Token mock-admin-token"), (b"content-type", b"application/json"),
                         (b"content-length", str(len(data)).encode())],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    replies = []

    async def receive():
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message):
        replies.append(message)
    await server(scope, receive, send)
    payload = b"".join(m.get("body", b"") for m in replies if m["type"] == "http.response.body")
    return replies[0]["status"], (json.loads(payload) if payload else None)


class Child:
    """The calls of one child process, each one returned ready to time: (method, path, body, query, expected)."""

    def __init__(self, server, loop):
        self.server, self.loop, self.made = server, loop, 0

    def call(self, method, path, body=None, query=b"", expect=200):
        status, reply = self.loop.run_until_complete(_asgi(self.server, method, path, body, query))
        if status != expect:
            sys.exit(f"{method} {path}: {status} {reply}")
        return reply

    def timed(self, method, path, body=None, query=b"", expect=200):
        wall, cpu = time.perf_counter(), time.process_time()
        self.call(method, path, body, query, expect)
        return time.perf_counter() - wall, time.process_time() - cpu

    def repository(self):
        self.made += 1
        return {"url": f"https://git.example.com/bench/repo-{self.made}.git", "branch": "main"}

    def application(self, git):
        self.made += 1
        return self.call("POST", f"/environment/{ENV}/application", {"name": f"app-{self.made}", "git_repository": git},
                         expect=201)["id"]

    def deploy(self, app):
        took = self.timed("POST", f"/application/{app}/deploy", {}, expect=202)
        self.call("POST", "/_mock/clock/advance", {"seconds": 600})
        return took

    def one_of_each(self):
        self.made += 1
        variable = self.timed("POST", f"/project/{PROJECT}/environmentVariable",
                              {"key": f"BENCH_{self.made}", "value": "x"}, expect=201)
        new = self.deploy(self.application(self.repository()))
        seen_git = self.repository()
        self.deploy(self.application(seen_git))
        seen = self.deploy(self.application(seen_git))
        job = self.call("POST", f"/environment/{ENV}/job", {
            "name": f"job-{self.made}", "schedule": {"cronjob": {"scheduled_at": "*/10 * * * *"}},
            "source": {"docker": {"git_repository": self.repository(), "dockerfile_path": "Dockerfile"}}},
            expect=201)["id"]
        page = self.timed("GET", f"/job/{job}/commit", query=b"page=2&page_size=20")
        return dict(zip(KINDS, (variable, new, seen, page)))


def inproc(calls):
    """The child: p50 wall and CPU ms per kind, as one JSON line."""
    import mockserver
    from mockserver.app import MockServer
    from mockserver.core.settings import Settings

    server = MockServer(Settings(clock="manual", rate_limit=10**9, rate_window=3600))
    loop = asyncio.new_event_loop()
    child = Child(server, loop)
    for _ in range(WARM_UP):
        child.one_of_each()
    gc.collect()
    gc.freeze()
    samples = [child.one_of_each() for _ in range(calls)]
    out = {kind: {"wall_ms": statistics.median(s[kind][0] for s in samples) * 1e3,
                  "cpu_ms": statistics.median(s[kind][1] for s in samples) * 1e3} for kind in KINDS}
    print("INPROC " + json.dumps({"mockserver": str(Path(mockserver.__file__).parent.parent), "kinds": out}))


def run_child(tree, calls):
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--inproc", "--calls", str(calls)],
                          capture_output=True, text=True, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
    line = next((x for x in done.stdout.splitlines() if x.startswith("INPROC ")), None)
    if line is None:
        sys.exit(f"the child for {tree} failed:\n{done.stderr[-3000:]}")
    result = json.loads(line[len("INPROC "):])
    if Path(result["mockserver"]).resolve() != Path(tree).resolve():
        sys.exit(f"the child for {tree} imported mockserver from {result['mockserver']}")
    return result["kinds"]


def report(trees, results, rounds, calls):
    print(f"p50 of {calls} calls a kind, median of {rounds} rounds; in-process, ms (wall / CPU); "
          f"load {os.getloadavg()[0]:.2f}\n")
    print("| checkout | " + " | ".join(KINDS) + " | new-repository deploy / variable create (wall, CPU) |")
    print("|---|" + "---:|" * (len(KINDS) + 1))
    for label in trees:
        cells, ratio = [], {}
        for kind in KINDS:
            wall = statistics.median(r[kind]["wall_ms"] for r in results[label])
            cpu = statistics.median(r[kind]["cpu_ms"] for r in results[label])
            cells.append(f"{wall:.3f} / {cpu:.3f}")
            ratio[kind] = (wall, cpu)
        new, var = ratio[KINDS[1]], ratio[KINDS[0]]
        print(f"| {label} | " + " | ".join(cells) + f" | {new[0] / var[0]:.2f}x / {new[1] / var[1]:.2f}x |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", help="a commit to compare with, checked out into a temporary git worktree")
    parser.add_argument("--tree", action="append", default=[],
                        help="another checkout to compare with (its mockserver through PYTHONPATH); repeatable")
    parser.add_argument("--inproc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inproc:
        return inproc(args.calls)
    made, trees = None, {}
    if args.before:
        made = Path(tempfile.mkdtemp(prefix="deploy-before-")) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(made), args.before], check=True,
                       capture_output=True)
        trees[f"before ({args.before})"] = made
    trees.update({tree: Path(tree) for tree in args.tree})
    trees["this checkout"] = ROOT
    try:
        results = {label: [] for label in trees}
        for _ in range(args.rounds):
            for label, tree in trees.items():
                results[label].append(run_child(tree, args.calls))
        report(trees, results, args.rounds, args.calls)
    finally:
        if made is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(made)], check=False)


if __name__ == "__main__":
    main()
