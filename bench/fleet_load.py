#!/usr/bin/env python3
"""The load generator of bench/fleet.py (part `mix`): a CI fleet's traffic on many sandboxes.

    taskset -c 1 .venv/bin/python bench/fleet_load.py --port P --pid SERVER_PID --sandboxes 50 \
        --seconds 60 --clients 16 --out result.json [--gc-file FILE]

`--clients` keep-alive connections, each a loop of one request at a time, written by hand as
HTTP/1.1 bytes on an asyncio Protocol (uvloop when installed): no HTTP library, so that the
client costs a fraction of what the server does (its own CPU use is measured and reported).
Every request names a sandbox `fleet-<k>` (X-Mock-Sandbox), k drawn at random; the sandboxes
are made by their first request. The mix (OPS): poll an application's status (most frequent),
deploy it (409 while one runs: expected), read its deployment history and a job's commits,
create project variables and secrets with unique keys and delete them again, read the journal
(`GET /_mock/calls?limit=20`), list the projects.

Phases: one request to each sandbox (they are created), `--warmup` seconds of the mix, then the
timed window of `--seconds`. During the window, every second: the server's CPU time
(utime + stime, /proc/<pid>/stat) and, every `--rss-every` seconds, its RSS (VmRSS); every
`--slice` seconds a slice closes with its requests, server CPU per request and latencies.
With `--gc-file` (the server runs bench/probe/sitecustomize.py), the collector's pauses of
the window. Writes one JSON document to `--out`. Only the standard library is needed.
"""
import argparse
import asyncio
import json
import os
import random
import resource
import sys
import time
from array import array
from collections import Counter, deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "probe"))
import gcpauses

try:
    import orjson
    loads = orjson.loads
except ImportError:                                  # the standard library will do
    loads = json.loads

ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
APP = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"         # application `web` of storefront/production
JOB = "b3d5f7a9-1c3e-4f5a-9b1d-5f7a9c1e3b27"         # job `nightly-report`, built from git: it has commits
TOKEN = "Token mock-admin-token"

# kind of request -> weight in the mix (variable and secret: a create or a delete of an earlier create)
OPS = {"status": 40, "deploy": 8, "history": 5, "commits": 3, "variable": 12, "secret": 6, "journal": 4,
       "projects": 4}
# what each request may answer without being an error (a deploy while one runs: 409)
EXPECTED = {"status": (200,), "deploy": (202, 409), "history": (200,), "commits": (200,),
            "variable-create": (201,), "variable-delete": (204,), "secret-create": (201,), "secret-delete": (204,),
            "journal": (200,), "projects": (200,)}
PATHS = {"status": f"/application/{APP}/status", "deploy": f"/application/{APP}/deploy",
         "history": f"/application/{APP}/deploymentHistory?page=1&page_size=10",
         "commits": f"/job/{JOB}/commit", "journal": "/_mock/calls?limit=20",
         "projects": f"/organization/{ORG}/project",
         "variable": f"/project/{PROJECT}/environmentVariable", "secret": f"/project/{PROJECT}/secret"}


def http_request(method, path, sandbox, body=None):
    """The bytes of one HTTP/1.1 keep-alive request."""
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {TOKEN}\r\n"
            f"X-Mock-Sandbox: {sandbox}\r\n")
    data = b""
    if body is not None:
        data = json.dumps(body, separators=(",", ":")).encode()
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    return head.encode() + b"\r\n" + data


class Connection(asyncio.Protocol):
    """One keep-alive connection, one request at a time. A reply's body is read by its Content-Length,
    or chunk by chunk (the mock's API replies are chunked: they carry no Content-Length), or is empty
    (204)."""

    def __init__(self):
        self.transport = None
        self.buffer = bytearray()
        self.waiter = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        if self.waiter is not None and not self.waiter.done():
            self._complete()

    def connection_lost(self, exc):
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError(f"connection lost: {exc}"))

    def _complete(self):
        """Resolve the waiter when the buffer holds a whole reply (status, body); else wait for more."""
        buffer = self.buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(buffer[:end]).lower()
        status = int(head[9:12])
        at = head.find(b"\r\ncontent-length:")
        if at >= 0:
            stop = head.find(b"\r\n", at + 2)
            total = end + 4 + int(head[at + 17:stop if stop >= 0 else None])
            if len(buffer) < total:
                return
            body = bytes(buffer[end + 4:total])
        elif b"\r\ntransfer-encoding: chunked" in head:
            found = dechunk(buffer, end + 4)
            if found is None:
                return
            body, total = found
        else:
            body, total = b"", end + 4
        del buffer[:total]
        self.waiter.set_result((status, body))

    async def send(self, data):
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return await self.waiter

    def close(self):
        if self.transport is not None:
            self.transport.close()


def dechunk(buffer, pos):
    """(body, end offset) of a chunked body starting at `pos`, or None while it is incomplete."""
    chunks = []
    while True:
        line = buffer.find(b"\r\n", pos)
        if line < 0:
            return None
        size = int(bytes(buffer[pos:line]).split(b";")[0], 16)
        if size == 0:                                 # the last chunk, then trailers (none here) and an empty line
            if len(buffer) < line + 4:
                return None
            if buffer[line + 2:line + 4] == b"\r\n":
                return b"".join(chunks), line + 4
            blank = buffer.find(b"\r\n\r\n", line + 2)
            return None if blank < 0 else (b"".join(chunks), blank + 4)
        if len(buffer) < line + 2 + size + 2:
            return None
        chunks.append(bytes(buffer[line + 2:line + 2 + size]))
        pos = line + 2 + size + 2


class Fleet:
    """The sandboxes and what each holds that a later request deletes (variables and secrets)."""

    def __init__(self, sandboxes, tag):
        self.names = [f"fleet-{k}" for k in range(sandboxes)]
        self.pending = {"variable": [deque() for _ in self.names], "secret": [deque() for _ in self.names]}
        self.kinds = list(OPS)
        self.weights = list(OPS.values())
        self.tag = tag
        self.made = 0

    def pick(self, rng):
        """(request name, sandbox index, bytes, id it deletes or None)."""
        k = rng.randrange(len(self.names))
        kind = rng.choices(self.kinds, self.weights)[0]
        box = self.names[k]
        if kind in ("variable", "secret"):
            pending = self.pending[kind][k]
            if len(pending) >= 3 or (pending and rng.random() < 0.5):
                ident = pending.popleft()          # taken now: no other connection deletes it too
                return f"{kind}-delete", k, http_request("DELETE", f"{PATHS[kind]}/{ident}", box), ident
            self.made += 1
            key = f"FLEET_{self.tag}_{self.made}"
            return f"{kind}-create", k, http_request("POST", PATHS[kind], box, {"key": key, "value": "v"}), None
        method = "POST" if kind == "deploy" else "GET"
        return kind, k, http_request(method, PATHS[kind], box), None

    def done(self, name, k, status, body):
        if name.endswith("-create") and status == 201:
            self.pending[name[:-7]][k].append(loads(body)["id"])


class Recorder:
    """Latencies (in order of completion, so a slice is a range of them), per request name, and statuses."""

    def __init__(self):
        self.latency = array("d")
        self.by_name = {}
        self.statuses = {}
        self.socket_errors = 0

    def add(self, name, status, seconds):
        self.latency.append(seconds)
        self.by_name.setdefault(name, array("d")).append(seconds)
        counts = self.statuses.setdefault(name, Counter())
        counts[status] += 1

    def __len__(self):
        return len(self.latency)


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] if ordered else None


def latency_ms(values):
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(ordered), "p50_ms": round(pct(ordered, 50) * 1e3, 3), "p99_ms": round(pct(ordered, 99) * 1e3, 3),
            "max_ms": round(ordered[-1] * 1e3, 3), "mean_ms": round(sum(ordered) / len(ordered) * 1e3, 3)}


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)


def own_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Load:
    def __init__(self, args):
        self.args = args
        self.fleet = Fleet(args.sandboxes, args.tag)
        self.stop = False
        self.stopped_early = None
        self.connections = []

    async def connect(self):
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(Connection, "127.0.0.1", self.args.port)
        return conn

    async def open(self):
        self.connections = [await self.connect() for _ in range(self.args.clients)]

    async def worker(self, n, recorder, deadline, seed):
        """One connection's loop: a request, its reply, the next, until the deadline."""
        rng = random.Random(seed)
        conn = self.connections[n]
        while not self.stop and time.perf_counter() < deadline:
            name, k, data, _ = self.fleet.pick(rng)
            began = time.perf_counter()
            try:
                status, body = await conn.send(data)
            except (ConnectionError, OSError):
                recorder.socket_errors += 1
                conn.close()
                conn = self.connections[n] = await self.connect()
                continue
            recorder.add(name, status, time.perf_counter() - began)
            self.fleet.done(name, k, status, body)

    async def run_mix(self, seconds, seed):
        recorder = Recorder()
        deadline = time.perf_counter() + seconds
        await asyncio.gather(*(self.worker(n, recorder, deadline, seed * 1000 + n)
                               for n in range(len(self.connections))))
        return recorder

    async def create_all(self):
        """One GET status to each sandbox: each is made by its first request. (seconds, statuses)."""
        statuses = Counter()
        names = list(self.fleet.names)
        began = time.perf_counter()

        async def one(n):
            conn = self.connections[n]
            for name in names[n::len(self.connections)]:
                status, _ = await conn.send(http_request("GET", PATHS["status"], name))
                statuses[status] += 1
        await asyncio.gather(*(one(n) for n in range(len(self.connections))))
        return time.perf_counter() - began, dict(statuses)

    async def sample(self, recorder, t0, cpu0, out):
        """Every second until the window ends: server CPU; RSS every --rss-every s; a slice every --slice s."""
        args, pid = self.args, self.args.pid
        last = {"index": 0, "cpu": cpu0, "client": own_cpu(), "at": t0}
        tick = 0
        while not self.stop:
            tick += 1
            await asyncio.sleep(max(0.0, t0 + tick - time.perf_counter()))
            if self.stop or tick > args.seconds:
                break
            now = time.perf_counter()
            if tick % args.rss_every == 0:
                rss = rss_mib(pid)
                out["rss"].append((round(now - t0, 1), rss))
                if rss > args.max_rss_mib:
                    self.stop = True
                    self.stopped_early = f"server RSS {rss} MiB over --max-rss-mib {args.max_rss_mib} at {tick} s"
            if tick % args.slice == 0 and tick < args.seconds:   # the last one closes when the window ends
                out["slices"].append(close_slice(recorder, last, pid, now, t0))

    async def window(self):
        args = self.args
        out = {"rss": [], "slices": []}
        out["gc_first"] = gcpauses.ask(args.gc_file, args.pid) if args.gc_file else None
        recorder = Recorder()
        t0, cpu0, client0, wall0 = time.perf_counter(), cpu_seconds(args.pid), own_cpu(), time.time()
        out["rss"].append((0.0, rss_mib(args.pid)))
        deadline = t0 + args.seconds
        sampler = asyncio.ensure_future(self.sample(recorder, t0, cpu0, out))
        await asyncio.gather(*(self.worker(n, recorder, deadline, 1 + n) for n in range(len(self.connections))))
        t1, cpu1, client1, wall1 = time.perf_counter(), cpu_seconds(args.pid), own_cpu(), time.time()
        self.stop = True
        await sampler
        tail_from = sum(s["requests"] for s in out["slices"])
        if tail_from < len(recorder):              # the last slice, with the replies that were in flight
            start = out["slices"][-1]["t_end"] if out["slices"] else 0.0
            out["slices"].append(slice_of(recorder, tail_from, len(recorder), start, t1 - t0,
                                          cpu1 - (cpu0 + sum(s["server_cpu_s"] for s in out["slices"])),
                                          client1 - (client0 + sum(s["client_cpu_s"] for s in out["slices"])),
                                          rss_mib(args.pid)))
        out["rss"].append((round(t1 - t0, 1), rss_mib(args.pid)))
        out["gc_last"] = gcpauses.ask(args.gc_file, args.pid) if args.gc_file else None
        if out["gc_first"] and out["gc_last"]:
            out["gc"] = gcpauses.window(out["gc_first"], out["gc_last"], wall0, wall1)
        n = len(recorder)
        out.update({
            "seconds": round(t1 - t0, 3), "requests": n, "rps": round(n / (t1 - t0), 1),
            "server_cpu_s": round(cpu1 - cpu0, 3), "cpu_us_per_request": round((cpu1 - cpu0) / max(1, n) * 1e6, 2),
            "server_busy": round((cpu1 - cpu0) / (t1 - t0), 3),
            "client_cpu_s": round(client1 - client0, 3), "client_busy": round((client1 - client0) / (t1 - t0), 3),
            "client_cpu_us_per_request": round((client1 - client0) / max(1, n) * 1e6, 2),
            "latency": latency_ms(recorder.latency),
            "by_request": {name: {**latency_ms(values), "statuses": dict(recorder.statuses[name])}
                           for name, values in sorted(recorder.by_name.items())},
            "socket_errors": recorder.socket_errors, "wall_start": wall0, "wall_end": wall1,
            "stopped_early": self.stopped_early})
        statuses = Counter()
        for counts in recorder.statuses.values():
            statuses.update(counts)
        out["statuses"] = {str(k): v for k, v in sorted(statuses.items())}
        out["unexpected"] = sum(v for name, counts in recorder.statuses.items() for status, v in counts.items()
                                if status not in EXPECTED[name])
        out["server_errors"] = sum(v for status, v in statuses.items() if status >= 500)
        return out


def slice_of(recorder, first, last, start, end, server_cpu, client_cpu, rss):
    """Figures of the requests first..last (completed between `start` and `end` seconds of the window)."""
    n = last - first
    part = recorder.latency[first:last]
    return {"t_start": round(start, 1), "t_end": round(end, 1), "requests": n,
            "rps": round(n / max(1e-9, end - start), 1), "server_cpu_s": round(server_cpu, 3),
            "cpu_us_per_request": round(server_cpu / max(1, n) * 1e6, 2), "client_cpu_s": round(client_cpu, 3),
            "p50_ms": round((pct(part, 50) or 0) * 1e3, 3), "p99_ms": round((pct(part, 99) or 0) * 1e3, 3),
            "max_ms": round(max(part, default=0) * 1e3, 3), "rss_mib": rss}


def close_slice(recorder, last, pid, now, t0):
    """The slice since the previous one; `last` is moved to now."""
    index, cpu, client = len(recorder), cpu_seconds(pid), own_cpu()
    out = slice_of(recorder, last["index"], index, last["at"] - t0, now - t0, cpu - last["cpu"],
                   client - last["client"], rss_mib(pid))
    last.update(index=index, cpu=cpu, client=client, at=now)
    return out


async def main(args):
    load = Load(args)
    await load.open()
    result = {"sandboxes": args.sandboxes, "clients": args.clients, "rss_before_mib": rss_mib(args.pid)}
    result["create_s"], result["create_statuses"] = await load.create_all()
    result["rss_created_mib"] = rss_mib(args.pid)
    if args.warmup > 0:
        warm = await load.run_mix(args.warmup, seed=99)
        result["warmup_requests"] = len(warm)
    result.update(await load.window())
    for conn in load.connections:
        conn.close()
    Path(args.out).write_text(json.dumps(result) + "\n")


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server's process id (CPU time, RSS)")
    parser.add_argument("--sandboxes", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--clients", type=int, default=16, help="concurrent keep-alive connections")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--slice", type=int, default=10, help="seconds per slice of the window")
    parser.add_argument("--rss-every", type=int, default=2, help="seconds between RSS samples")
    parser.add_argument("--max-rss-mib", type=float, default=8192, help="end the window early past this RSS")
    parser.add_argument("--gc-file", help="the server's gc probe file (bench/probe)")
    parser.add_argument("--tag", default="r", help="part of the variable keys (alphanumeric)")
    parser.add_argument("--out", required=True)
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse()
    try:
        import uvloop  # the faster loop, when the venv has it (the server's does)
    except ImportError:
        uvloop = None
    (uvloop.run if uvloop else asyncio.run)(main(arguments))
