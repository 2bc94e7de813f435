#!/usr/bin/env python3
"""One cell of bench/fleet.py's part `growth`: the cost of create, read, list page and delete when a
record has N siblings, in-process through the whole ASGI app (no network).

    taskset -c 0 .venv/bin/python bench/fleet_growth.py --family variables --size 10000 --calls 300

Run in a fresh process per (version, family, size), with the version to measure first on PYTHONPATH
(bench/fleet.py does that). Families (FAMILIES): project-level environment variables (siblings: the
variables of one project), projects (the projects of the organization), applications (the services
of one environment).

The siblings are filled quickly and the same way for every version: one record is created through
the API, and the rest are copies of it added straight to the store (`Table.add(Entry(...))`, an API
both versions have), each with a new id and unique name or key; an application's copies also get
copies of the built-in variable its create added to the environment. (Filling 100,000 through the
API would be quadratic where writes scan their siblings.) Then a full collection, and `--calls`
rounds of: create one (POST), read a random sibling (GET), read page 1 of the list
(`?page=1&page_size=20`), delete a random sibling (DELETE; the created one takes its place among
the siblings), each timed around the ASGI call (time.perf_counter, and the thread's CPU time),
and, untimed, a clock advance of 60 s (`POST /_mock/clock/advance`) so that deployment requests
(an application's delete is one) do not pile up on the stopped clock. Prints one line
`GROWTH {json}`. The server is built as `mockserver serve` builds it (gc.freeze after start-up,
the same gc thresholds), on a manual clock.
"""
import argparse
import asyncio
import copy
import gc
import json
import os
import random
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "probe"))
import gcpauses

ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"       # storefront
ENV = "e4a6c8b0-2d4f-4a6c-8e0b-2d4f6a8c0e84"           # storefront/production (7 services in the fixtures)
GIT = {"url": "https://codehost1.example/acme/growth.git", "branch": "main"}


class Family:
    """Where the siblings live and the four requests on them."""

    def __init__(self, label, table, parent, collection, item, body):
        self.label, self.table, self.parent = label, table, parent
        self.collection = collection               # POST here creates, GET here lists
        self.item = item                           # path of one record, from its id
        self.body = body                           # create body, from a unique number


FAMILIES = {
    "variables": Family("project variables (siblings: the variables of one project)", "variables", PROJECT,
                        f"/project/{PROJECT}/environmentVariable",
                        lambda i: f"/project/{PROJECT}/environmentVariable/{i}",
                        lambda n: {"key": f"GROWTH_{n}", "value": "v"}),
    "projects": Family("projects (siblings: the projects of the organization)", "projects", ORG,
                       f"/organization/{ORG}/project", lambda i: f"/project/{i}",
                       lambda n: {"name": f"growth-{n}"}),
    "applications": Family("applications (siblings: the services of one environment)", "services", ENV,
                           f"/environment/{ENV}/application", lambda i: f"/application/{i}",
                           lambda n: {"name": f"growth-{n}", "git_repository": GIT}),
}


# ------------------------------------------------------------------ the ASGI call
def scope_of(method, path, body=b""):
    path, _, query = path.partition("?")
    headers = [(b"host", b"mock"), (b"authorization", b"Token mock-admin-token")]
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return {"type": "http", "http_version": "1.1", "method": method, "scheme": "http", "path": path,
            "raw_path": path.encode(), "query_string": query.encode(), "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}


async def call(server, method, path, payload=None):
    """(status, body bytes, (wall seconds, CPU seconds)): one request through the whole ASGI app, timed
    around the call with time.perf_counter and, so that a preemption by another process on a shared
    machine shows as such, with this thread's CPU time."""
    body = json.dumps(payload).encode() if payload is not None else b""
    scope = scope_of(method, path, body)
    reply = {"status": None, "body": []}

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            reply["status"] = message["status"]
        elif message["type"] == "http.response.body":
            reply["body"].append(message.get("body", b""))
    began, cpu = time.perf_counter(), time.thread_time()
    await server(scope, receive, send)
    took = (time.perf_counter() - began, time.thread_time() - cpu)
    return reply["status"], b"".join(reply["body"]), took


def expect(status, wanted, what, body):
    if status != wanted:
        sys.exit(f"{what}: {status} instead of {wanted}: {body[:300]!r}")


# ------------------------------------------------------------------ filling
def new_ids(seed):
    """The same sequence of fresh ids for every version (never ids the server's own generator gives)."""
    rng = random.Random(seed)
    while True:
        yield str(uuid.UUID(bytes=rng.randbytes(16), version=4))


def clone_entry(Entry, template, ident, changes):
    data = copy.deepcopy(template.data)
    data["id"] = ident
    data.update(changes)
    return Entry(data, template.org, template.parent, copy.deepcopy(template.private), dict(template.meta))


def fill(rt, family, template_id, count, seed):
    """Add `count` copies of the record `template_id` to the store; their ids."""
    from mockserver.world.store import Entry
    store = rt.store
    table = store.tables[family.table]
    template = table.rows[template_id]
    ids = new_ids(seed)
    built_ins = []
    if family.table == "services":                 # what its create put in the environment
        built_ins = [(store.tables[t], e) for t in ("variables", "secrets") for e in store.tables[t].under(ENV)
                     if e.data.get("service_id") == template_id]
    made = []
    for n in range(count):
        ident = next(ids)
        unique = {"key": f"FILL_{n}"} if family.table == "variables" else {"name": f"fill-{n}"}
        table.add(clone_entry(Entry, template, ident, unique))
        for owner, built_in in built_ins:
            short, name = template_id[:8].upper(), template.data["name"]
            changes = {"service_id": ident, "service_name": unique["name"],
                       "key": built_in.data["key"].replace(short, ident[:8].upper())}
            if "value" in built_in.data:
                changes["value"] = built_in.data["value"].replace(name, unique["name"])
            owner.add(clone_entry(Entry, built_in, next(ids), changes))
        made.append(ident)
    return made


def siblings(rt, family):
    return len(rt.store.tables[family.table].under(family.parent))


# ------------------------------------------------------------------ the cell
def summary(timings):
    """p50/p99/max/mean in ms of (wall, CPU) pairs: the wall-clock figures, and p50/p99 of the CPU times."""
    wall = sorted(t[0] for t in timings)
    cpu = sorted(t[1] for t in timings)
    n = len(wall)

    def at(values, p):
        return round(values[min(n - 1, int(n * p))] * 1e3, 4)
    return {"n": n, "p50_ms": at(wall, 0.5), "p99_ms": at(wall, 0.99), "max_ms": round(wall[-1] * 1e3, 4),
            "mean_ms": round(sum(wall) / n * 1e3, 4), "cpu_p50_ms": at(cpu, 0.5), "cpu_p99_ms": at(cpu, 0.99)}


async def measure(server, family, pool, calls, warmup, seed):
    """`warmup` + `calls` rounds of create, read, list page, delete; the timings of the last `calls`."""
    rng = random.Random(seed)
    times = {"create": [], "read": [], "list page": [], "delete": []}
    for n in range(warmup + calls):
        status, body, t_create = await call(server, "POST", family.collection, family.body(f"m{n}"))
        expect(status, 201, "create", body)
        created = json.loads(body)["id"]
        status, body, t_read = await call(server, "GET", family.item(rng.choice(pool)))
        expect(status, 200, "read", body)
        status, body, t_list = await call(server, "GET", family.collection + "?page=1&page_size=20")
        expect(status, 200, "list page", body)
        slot = rng.randrange(len(pool))
        status, body, t_delete = await call(server, "DELETE", family.item(pool[slot]))
        expect(status, 204, "delete", body)
        pool[slot] = created
        # untimed: the manual clock moves on, so that the environment's deployment queue empties (an
        # application's delete is a deployment request; on a stopped clock they pile up and each delete
        # costs more than the one before, whatever the number of siblings)
        status, body, _ = await call(server, "POST", "/_mock/clock/advance", {"seconds": 60})
        expect(status, 200, "clock advance", body)
        if n >= warmup:
            for what, took in (("create", t_create), ("read", t_read), ("list page", t_list), ("delete", t_delete)):
                times[what].append(took)
    return {what: summary(values) for what, values in times.items()}


async def cell(args):
    from mockserver.app import MockServer
    from mockserver.core.settings import Settings

    family = FAMILIES[args.family]
    server = MockServer(Settings(rate_limit=10**9, rate_window=3600, clock="manual"))
    gc.freeze()                                     # as `mockserver serve` does after start-up
    gc.set_threshold(10_000, 50, 1000)
    rt = server.rt
    out = {"family": args.family, "size": args.size, "fixture_siblings": siblings(rt, family),
           "mockserver": sys.modules["mockserver"].__file__, "pid": os.getpid()}
    status, body, _ = await call(server, "POST", family.collection, family.body("template"))
    expect(status, 201, "create of the template", body)
    began = time.perf_counter()
    pool = fill(rt, family, json.loads(body)["id"], max(0, args.size - siblings(rt, family)), f"fill-{args.family}")
    out["fill_s"] = round(time.perf_counter() - began, 3)
    out["siblings"] = siblings(rt, family)
    status, body, _ = await call(server, "GET", family.collection + "?page=1&page_size=20")
    out["listed_total"] = json.loads(body)["pagination"]["total_count"]   # the copies are seen by the API
    if not pool:
        sys.exit(f"size {args.size} leaves no copies to read and delete (the fixtures hold {out['fixture_siblings']})")
    gc.collect()
    pauses = gcpauses.Pauses()
    before = pauses.start().snapshot()
    began = time.process_time()
    out["ops"] = await measure(server, family, pool, args.calls, args.warmup, seed=7)
    out["cpu_s"] = round(time.process_time() - began, 3)
    pauses.stop()
    window = gcpauses.window(before, pauses.snapshot())
    out["gc"] = {key: window[key] for key in ("count", "max_ms", "max_is_bound", "total_ms")}
    out["siblings_after"] = siblings(rt, family)
    out["calls"], out["warmup"] = args.calls, args.warmup
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", choices=FAMILIES, required=True)
    parser.add_argument("--size", type=int, required=True, help="siblings (fixture records included)")
    parser.add_argument("--calls", type=int, default=300, help="timed rounds of the four requests")
    parser.add_argument("--warmup", type=int, default=20, help="untimed rounds first")
    args = parser.parse_args()
    print("GROWTH " + json.dumps(asyncio.run(cell(args))), flush=True)


if __name__ == "__main__":
    main()
