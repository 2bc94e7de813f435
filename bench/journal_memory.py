#!/usr/bin/env python3
"""What a journaled call really costs in memory, against what the journal's budget counts for it.

    python bench/journal_memory.py [--calls 20000] [--allocator jemalloc|malloc]

The mock's ASGI app is called in-process (no sockets) with the journal's bounds out of the way; the heap
in use is read before and after the calls, and compared with the bytes the budget (`--journal-memory`)
counted for them. All but a journal's newest 32 calls are packed (mockserver/calls/log.py): 20,000 calls
of one kind are the best case of that packing (a fleet's mixed calls pack less well); what
is measured is whether the budget counts what the heap holds. The process runs under the allocator
asked for (as `mockserver serve` would; it restarts itself with it when needed): under glibc's malloc
the heap in use is mallinfo2's (the allocator's own overhead per block included), under jemalloc its
`stats.allocated` (blocks rounded up to their size class). Linux with glibc only.
"""
import argparse
import asyncio
import ctypes
import gc
import os
import sys

APP = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"
ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
REQUESTS = {"GET status": f"/application/{APP}/status", "GET 50 projects": f"/organization/{ORG}/project",
            "GET variables": f"/project/{PROJECT}/environmentVariable", "GET unknown (404)": "/project/none"}
HEADERS = [(b"host", b"127.0.0.1:8080"), (b"authorization", b"Token mock-admin-token"),
           (b"user-agent", b"python-httpx/0.28.1"), (b"accept", b"*/*"), (b"accept-encoding", b"gzip, deflate")]


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def heap_in_use():
    process = ctypes.CDLL(None)
    mallctl = getattr(process, "mallctl", None)
    if mallctl is not None:                      # jemalloc: refresh its statistics, then read them
        epoch, value, size = ctypes.c_uint64(1), ctypes.c_size_t(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
        mallctl(b"epoch", None, None, ctypes.byref(epoch), ctypes.sizeof(epoch))
        mallctl(b"stats.allocated", ctypes.byref(value), ctypes.byref(size), None, 0)
        return value.value
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    return libc.mallinfo2().uordblks


def scope(path):
    return {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
            "headers": HEADERS, "scheme": "http", "server": ("127.0.0.1", 8080), "client": ("127.0.0.1", 5555),
            "http_version": "1.1", "asgi": {"version": "3.0"}, "root_path": ""}


async def measure(calls):
    from mockserver.app import MockServer
    from mockserver.core.settings import Settings

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        pass

    rows = []
    for name, path in REQUESTS.items():
        server = MockServer(Settings(rate_limit=10 ** 9, rate_window=3600, journal_size=calls + 1000,
                                     journal_memory=1 << 40))
        for _ in range(200):                      # warm: caches, first allocations
            await server(scope(path), receive, send)
        gc.collect()
        heap, counted = heap_in_use(), server.shared.budget.total
        for _ in range(calls):
            await server(scope(path), receive, send)
        gc.collect()
        rows.append((name, (heap_in_use() - heap) / calls, (server.shared.budget.total - counted) / calls))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--allocator", choices=("jemalloc", "malloc"), default="malloc")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from mockserver.process import allocator
    environ = allocator.environment(args.allocator, os.environ)
    if environ is not None:
        os.execve(sys.executable, [sys.executable, *sys.argv], environ)
    rows = asyncio.run(measure(args.calls))
    print(f"{args.calls} calls each under {allocator.in_force()}, heap in use per call against the bytes the "
          "budget counted:\n")
    print("| request | heap per call | counted per call | counted / heap |\n| --- | ---: | ---: | ---: |")
    for name, heap, counted in rows:
        print(f"| {name} | {heap:,.0f} | {counted:,.0f} | {counted / heap:.2f} |")


if __name__ == "__main__":
    main()
